package app

import (
	"fmt"
	"io"
	"path/filepath"
	"runtime"

	"github.com/spf13/pflag"

	"github.com/superfluid/superfluid/app/trayhost"
)

// loginArgs are the flags the start-at-login entry runs the app with: --hidden, and the ones
// this run was given that say which app it is (its data, its models, its address, team mode and
// who may use it), so that login starts this app and not one on the defaults: without --team a
// team's server came up out of team mode, and without --key-policy or --insecure-open one on a
// non-loopback --host refused to serve. Paths are made absolute, as login does not start from
// this folder. --api-key stays out of a file others can read (keys in the store or a
// --key-policy file do the same), as do the other settings.
func loginArgs(fs *pflag.FlagSet, cfg Config) []string {
	args := []string{"--hidden"}
	dir := func(name, path string) {
		if !fs.Changed(name) || path == "" {
			return
		}
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		args = append(args, "--"+name+"="+path)
	}
	dir("data-dir", cfg.DataDir)
	dir("models-dir", cfg.ModelsDir)
	dir("key-policy", cfg.KeyPolicy)
	for _, name := range []string{"host", "port", "insecure-open", "team", "booking-approval", "booking-max-length", "booking-hours-per-week"} {
		if f := fs.Lookup(name); f != nil && f.Changed {
			args = append(args, "--"+name+"="+f.Value.String())
		}
	}
	return args
}

// watchTray follows the desktop's tray host: on macOS and Windows there always is one; on
// Linux and the BSDs a panel owns the StatusNotifier watcher on the session bus, or the
// window stays open and says so. Without a session bus it says so here too.
func watchTray(stderr io.Writer) *trayhost.Watcher {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		return trayhost.Fixed(true)
	}
	w, err := trayhost.Watch()
	if err != nil {
		fmt.Fprintf(stderr, "superfluid: %v: no tray icon; closing the window quits\n", err)
		return trayhost.Fixed(false)
	}
	if !w.Present() {
		fmt.Fprintln(stderr, "superfluid: no system tray on this desktop (nothing owns org.kde.StatusNotifierWatcher): closing the window quits")
	}
	return w
}
