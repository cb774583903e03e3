package tray

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
)

// Icons are the tray icon per state and the app icon.
type Icons struct {
	App   fyne.Resource
	State map[IconState]fyne.Resource
}

// App is the desktop app: one window with tabs and, where the desktop has one, a tray menu.
type App struct {
	fyne  fyne.App
	c     Controller
	icons Icons
	win   fyne.Window
	tabs  *container.AppTabs

	models     *modelsView
	discover   *discoverView // discover_view.go
	server     *serverView
	playground *playgroundView
	keys       *keysView
	team       *teamViews   // the Server tab's Lanes and Bookings in team mode (team_view.go)
	welcome    *welcomeView // the first-run welcome, once opened (welcome_view.go)
	desk       *desktopView // the no-tray banner and start at login (desktop_view.go)
	playTab    *container.TabItem
	serverTab  *container.TabItem
	keysTab    *container.TabItem
	connect    *connectView // the Connect tab (connect_view.go)
	connectTab *container.TabItem

	icon      IconState
	hasTray   bool
	trayMenu  *fyne.Menu // the one menu the tray is ever given (setTray)
	onQuit    func()
	stopWatch func()
	stopOnce  sync.Once
	confirm   dialog.Dialog // the quit confirmation while it is open (desktop_view.go)
	// quitting is set by Quit: UI updates already queued by a goroutine (an event, a tray
	// host that left) are dropped, so that nothing shows the window again as the app ends.
	quitting atomic.Bool
	dropped  atomic.Int64 // do's updates dropped after Quit (tests wait on it, not on a sleep)
}

// New builds the window over the controller. onQuit runs after the app stopped the server (it
// typically closes the rest of the program); nil does nothing more.
func New(a fyne.App, c Controller, icons Icons, onQuit func()) *App {
	t := &App{fyne: a, c: c, icons: icons, onQuit: onQuit, icon: -1, trayMenu: fyne.NewMenu("superfluid")}
	if icons.App != nil {
		a.SetIcon(icons.App)
	}
	t.win = a.NewWindow("superfluid")
	t.desk = newDesktopView(t)
	t.models = newModelsView(t)
	t.discover = newDiscoverView(t)
	t.server = newServerView(t)
	t.playground = newPlaygroundView(t)
	t.keys = newKeysView(t)
	t.connect = newConnectView(t)
	var serverContent fyne.CanvasObject
	t.team, serverContent = newServerTab(t)
	t.playTab = container.NewTabItemWithIcon("Playground", theme.MailComposeIcon(), t.playground.content)
	t.serverTab = container.NewTabItemWithIcon("Server", theme.ComputerIcon(), serverContent)
	t.keysTab = container.NewTabItemWithIcon("Keys", theme.AccountIcon(), t.keys.content)
	t.connectTab = container.NewTabItemWithIcon("Connect", theme.LoginIcon(), t.connect.content)
	t.tabs = container.NewAppTabs(
		container.NewTabItemWithIcon("Models", theme.StorageIcon(), t.models.content),
		container.NewTabItemWithIcon("Discover", theme.SearchIcon(), t.discover.content),
		t.serverTab,
		t.playTab,
		t.keysTab,
		t.connectTab, // last, so the other tabs keep their places (screenshot scripts click them)
	)
	t.tabs.OnSelected = func(item *container.TabItem) {
		if item == t.keysTab {
			t.keys.refresh() // keys created or revoked with superfluid keys meanwhile
		}
		if item == t.connectTab {
			t.connect.refresh() // keys created or revoked meanwhile
		}
		if item == t.serverTab {
			t.desk.readLogin() // the autostart entry may have been removed by hand
			shown := t.team.shown()
			go t.team.poll(shown)
			go func() {
				a := t.c.Activity()
				t.do(func() { t.server.refreshActivity(a) })
			}()
		}
	}
	t.win.SetContent(container.NewBorder(t.desk.banner, nil, nil, nil, t.tabs))
	// Files dropped on the window are attachments of the playground's next message.
	t.win.SetOnDropped(func(_ fyne.Position, uris []fyne.URI) {
		t.tabs.Select(t.playTab)
		t.playground.attach.attachURIs(uris)
	})
	t.win.Resize(fyne.NewSize(860, 620))
	// Closing the window hides it while a tray icon can bring it back; Quit (tray menu or main
	// menu) ends the app.
	_, t.hasTray = a.(desktop.App)
	t.win.SetCloseIntercept(t.closeWindow)
	t.win.SetMainMenu(fyne.NewMainMenu(fyne.NewMenu("superfluid",
		fyne.NewMenuItem("Copy API URL", t.copyURL),
		fyne.NewMenuItem("Welcome…", t.ShowWelcome),
		fyne.NewMenuItem("Connect your apps…", func() { t.Show("connect") }),
		fyne.NewMenuItemSeparator(),
		&fyne.MenuItem{Label: "Quit", IsQuit: true, Action: t.Quit},
	)))
	t.refresh()
	t.playground.refreshSaved()
	t.watch()
	return t
}

// uiMu serializes the UI updates goroutines hand to fyne.Do: the real driver runs them on one
// thread anyway, but fyne's test driver runs them on the calling goroutine (and shares its font
// caches between apps, hence one lock for the package).
var uiMu sync.Mutex

// do runs fn on the UI thread (fyne.Do), one update at a time; not once the app quit.
func (t *App) do(fn func()) {
	fyne.Do(func() {
		uiMu.Lock()
		defer uiMu.Unlock()
		if t.quitting.Load() {
			t.dropped.Add(1)
			return
		}
		fn()
	})
}

// doAndWait is do, waiting for fn to have run (or been dropped, once the app quit).
func (t *App) doAndWait(fn func()) {
	fyne.DoAndWait(func() {
		uiMu.Lock()
		defer uiMu.Unlock()
		if !t.quitting.Load() {
			fn()
		}
	})
}

// Window is the main window.
func (t *App) Window() fyne.Window { return t.win }

// Tabs is the window's tab bar (tests pick tabs with it).
func (t *App) Tabs() *container.AppTabs { return t.tabs }

// Show opens the window on a tab: "models", "server", "playground" or "keys" (in team mode
// also "lanes" and "bookings", the Server tab's).
func (t *App) Show(tab string) {
	for _, item := range t.tabs.Items {
		if strings.EqualFold(item.Text, tab) {
			t.tabs.Select(item)
		}
	}
	if t.team.selectSub(tab) {
		t.tabs.Select(t.serverTab)
	}
	t.win.Show()
	t.win.RequestFocus()
}

// stop ends the goroutines that feed the UI (events, activity polling); it may run twice.
func (t *App) stop() {
	t.stopOnce.Do(func() {
		if t.stopWatch != nil {
			t.stopWatch()
		}
	})
}

// Quit stops the server (unloading its workers) and ends the app.
func (t *App) Quit() {
	if t.quitting.Swap(true) {
		return // a second Quit (the tray's and a signal's) would stop the server twice
	}
	// A reply streaming in the Playground is kept as far as it came (the quit confirmation says
	// it ends where it is): its own end is one of the updates dropped from here on.
	t.playground.keepReply()
	t.stop()
	t.win.Hide()
	_ = t.c.StopServer()
	if t.onQuit != nil {
		t.onQuit()
	}
	// fyne 2.7 crashes when a pointer event already queued for a window reaches it while the
	// app is closing it (a nil viewport: seen when quitting right after start, with the pointer
	// over the window). With the window hidden, let the loop drain those events first. Then
	// end the driver's loop, as fyne's own SIGTERM handler does, rather than fyne.App.Quit:
	// that handler also caught the SIGTERM this Quit came from and may have ended the loop
	// meanwhile, and App.Quit's window calls on a terminated GLFW panic (exit code 2).
	go func() {
		time.Sleep(200 * time.Millisecond)
		fyne.Do(t.fyne.Driver().Quit)
	}()
}

// watch applies the controller's events to the UI, inside fyne.Do, and polls the server's
// activity (lanes, request log; in team mode the Lanes or Bookings shown) once a second while
// the Server tab is shown.
func (t *App) watch() {
	events, stop := t.c.Subscribe()
	done := make(chan struct{})
	t.stopWatch = func() {
		stop()
		close(done)
	}
	t.desk.watchHost(done)
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			showing, sub := false, ""
			t.doAndWait(func() { showing, sub = t.tabs.Selected() == t.serverTab, t.team.shown() })
			if showing {
				t.team.poll(sub)
				a := t.c.Activity()
				t.do(func() { t.server.refreshActivity(a) })
			}
		}
	}()
	go func() {
		for ev := range events {
			ev := ev
			t.do(func() {
				if ev.Kind == EventPull {
					t.models.showProgress(ev)
					return
				}
				t.refresh()
			})
		}
	}()
}

// refresh redraws every view, the tray menu and the tray icon from the controller's state.
func (t *App) refresh() {
	st, models := t.c.Server(), t.c.Models()
	t.models.refresh()
	t.server.refresh(st, models)
	t.playground.refresh(models)
	t.connect.refresh()
	t.setTray(st, models)
}

func (t *App) setTray(st ServerStatus, models []Model) {
	d, ok := t.fyne.(desktop.App)
	if !ok {
		return
	}
	// The items change in place: fyne 2.7 sets the menu it was first given again once the tray
	// registers on the bus (driver_desktop.go's onReady), so that one menu must stay current.
	t.trayMenu.Items = t.fyneItems(MenuItems(st, models))
	d.SetSystemTrayMenu(t.trayMenu)
	if icon := IconFor(st, models, t.c.Generating()); icon != t.icon {
		t.icon = icon
		if res := t.icons.State[icon]; res != nil {
			d.SetSystemTrayIcon(res)
		}
	}
}

// fyneItems turns the plain menu into fyne menu items.
func (t *App) fyneItems(items []MenuItem) []*fyne.MenuItem {
	var out []*fyne.MenuItem
	for _, it := range items {
		if it.Separator {
			out = append(out, fyne.NewMenuItemSeparator())
			continue
		}
		mi := fyne.NewMenuItem(it.Label, t.actionFunc(it))
		mi.Disabled = it.Disabled
		if it.Action == ActionQuit {
			mi.IsQuit = true
		}
		if len(it.Children) > 0 {
			mi.ChildMenu = fyne.NewMenu("", t.fyneItems(it.Children)...)
		}
		out = append(out, mi)
	}
	return out
}

func (t *App) actionFunc(it MenuItem) func() {
	switch it.Action {
	case ActionStartServer:
		return func() { t.server.run(t.c.StartServer) }
	case ActionStopServer:
		return func() { t.server.run(t.c.StopServer) }
	case ActionLoad:
		return func() { t.models.act("load", it.Arg, t.c.Load) }
	case ActionUnload:
		return func() { t.models.act("unload", it.Arg, t.c.Unload) }
	case ActionOpenWindow:
		return func() { t.Show("models") }
	case ActionOpenPlayground:
		return func() { t.Show("playground") }
	case ActionConnect:
		return func() { t.Show("connect") }
	case ActionCopyURL:
		return t.copyURL
	case ActionQuit:
		return t.Quit
	default:
		return nil
	}
}

func (t *App) copyURL() {
	t.fyne.Clipboard().SetContent(t.c.APIURL())
}

func (t *App) showError(err error) {
	dialog.ShowError(err, t.win)
}
