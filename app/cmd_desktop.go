package app

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"fyne.io/fyne/v2"
	fyneapp "fyne.io/fyne/v2/app"
	"github.com/spf13/cobra"

	"github.com/superfluid/superfluid/app/desktop"
	"github.com/superfluid/superfluid/assets"
	"github.com/superfluid/superfluid/tray"
)

// desktopFlags declares the desktop app's flags on the root command: the address and data dir
// as serve takes them, team mode's, and --hidden.
func desktopFlags(cmd *cobra.Command, cfg *Config, hidden *bool) {
	fs := cmd.Flags()
	fs.StringVar(&cfg.Host, "host", cfg.Host, "address the server listens on")
	fs.IntVar(&cfg.Port, "port", cfg.Port, "port the server listens on")
	fs.BoolVar(hidden, "hidden", false, "start in the tray without opening the window")
	kvDiskFlag(fs, cfg)
	mediaFlags(fs, cfg)
	accessFlags(fs, cfg)
	qosFlags(fs, cfg)
	libraryFlags(fs, cfg)
	teamFlags(fs, cfg)
	webFlag(fs, cfg)
}

// hasDisplay reports whether a window can be opened (on Linux: an X11 or Wayland display).
func hasDisplay() bool {
	if runtime.GOOS != "linux" && runtime.GOOS != "freebsd" {
		return true
	}
	return os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != ""
}

// runDesktop is `superfluid` with no command: the tray app and its window over the same server
// `superfluid serve` runs. Without a display it says so and runs the server alone.
func runDesktop(cmd *cobra.Command, cfg Config, hidden bool) error {
	if !hasDisplay() {
		fmt.Fprintln(cmd.ErrOrStderr(), "superfluid: no display (DISPLAY and WAYLAND_DISPLAY are unset); running the server alone, as superfluid serve does")
		return serve(cmd, cfg)
	}
	// Signals are caught from here on: a SIGTERM during start-up still quits cleanly.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	wl, err := listenWeb(cfg)
	if err != nil {
		return err
	}
	a, err := Open(cfg)
	if err != nil {
		if wl != nil {
			wl.Close()
		}
		return err
	}
	defer a.Close()
	if err := a.startTeam(); err != nil {
		return err
	}
	a.teamNote(cmd.ErrOrStderr())
	if err := a.startBackground(); err != nil {
		return err
	}
	host := watchTray(cmd.ErrOrStderr())
	defer host.Close()
	c := newController(a, func(d *desktop.Deps) { d.Tray, d.LoginArgs = host, loginArgs(cmd.Flags(), cfg) })
	defer c.Close()
	if wl != nil {
		web, err := a.startWeb(wl, c)
		if err != nil {
			wl.Close()
			return err
		}
		defer web.Close()
		web.note(cmd.ErrOrStderr())
	}
	hidden = hidden || c.StartHidden()
	ui := fyneapp.NewWithID("io.superfluid.app")
	app := tray.New(ui, c, trayIcons(), nil)
	hidden = hidden && app.HasTray() // hidden with no tray icon, nothing could open the window
	if err := c.StartServer(); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "superfluid: %v\n", err)
		hidden = false // the window says what is wrong and offers Start
		app.Show("server")
	} else {
		fmt.Fprintf(cmd.ErrOrStderr(), "superfluid: serving on http://%s (data in %s)\n", c.Server().Address, cfg.DataDir)
	}
	if !hidden {
		app.Show("models")
		if c.FirstRun() {
			app.ShowWelcome()
		}
	}
	app.ResumePulls() // the downloads running when the app last quit, on the Models tab
	go func() {
		<-ctx.Done()
		fyne.Do(app.Quit)
	}()
	ui.Run()
	return nil
}

// newController is the desktop controller over a's core, store and keys, serving a's API on
// the configured address; extra sets what only the desktop app has (the tray host).
func newController(a *App, extra ...func(*desktop.Deps)) *desktop.Controller {
	d := desktop.Deps{Service: a.svc, Store: a.store, Keys: a.keys, Handler: a.handler,
		Host: a.cfg.Host, Port: a.cfg.Port, Expose: a.expose,
		StopBackground: a.batches.StopBackground, StartBackground: a.startBackground, Runtimes: a.runtimes,
		Team: a.team.desktop(a.people), Search: searcher(a.sources)}
	for _, f := range extra {
		f(&d)
	}
	return desktop.New(d)
}

func trayIcons() tray.Icons {
	res := func(name string, b []byte) fyne.Resource { return fyne.NewStaticResource(name, b) }
	return tray.Icons{
		App: res("icon.png", assets.Icon),
		State: map[tray.IconState]fyne.Resource{
			tray.IconIdle:       res("tray-idle.png", assets.TrayIdle),
			tray.IconLoading:    res("tray-loading.png", assets.TrayLoading),
			tray.IconGenerating: res("tray-generating.png", assets.TrayGenerating),
			tray.IconError:      res("tray-error.png", assets.TrayError),
		},
	}
}
