package tray

import (
	"errors"
	"sync"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
)

// trayTestApp is fyne's test app with a system tray (desktop.App), recording what the app
// sets on it, as the real driver would show it.
type trayTestApp struct {
	fyne.App
	mu    sync.Mutex
	menu  *fyne.Menu
	first *fyne.Menu // the menu given first, which fyne 2.7 sets again when the tray registers
	icons []string   // the names of the icons set, in order
}

func (a *trayTestApp) SetSystemTrayMenu(m *fyne.Menu) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.menu = m
	if a.first == nil {
		a.first = m
	}
}

// register is what fyne 2.7's driver does once the tray registers on the bus (onReady): it
// shows the first menu it was given again, whatever was set since.
func (a *trayTestApp) register() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.menu = a.first
}

func (a *trayTestApp) SetSystemTrayIcon(r fyne.Resource) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.icons = append(a.icons, r.Name())
}

func (a *trayTestApp) SetSystemTrayWindow(fyne.Window) {}

func (a *trayTestApp) lastIcon() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.icons) == 0 {
		return ""
	}
	return a.icons[len(a.icons)-1]
}

// newDesktopApp is the app over a fake with a desktop (d) on a test app with a tray; quits
// counts the app's onQuit.
func newDesktopApp(t *testing.T, d *fakeDesktop) (*App, *fakeController, *trayTestApp, *int) {
	t.Helper()
	ta := &trayTestApp{App: test.NewTempApp(t)}
	f := newFake()
	f.desktop = d
	quits := 0
	icons := Icons{State: map[IconState]fyne.Resource{}}
	for _, s := range []IconState{IconIdle, IconLoading, IconGenerating, IconError} {
		icons.State[s] = fyne.NewStaticResource("tray-"+s.String()+".png", []byte(s.String()))
	}
	var app *App
	uiMu.Lock()
	app = New(ta, f, icons, func() { quits++ })
	app.Window().Resize(fyne.NewSize(860, 620))
	uiMu.Unlock()
	t.Cleanup(app.stop)
	return app, f, ta, &quits
}

// TestDesktopTrayHostBanner: with a tray host the banner is hidden and closing the window
// hides it; the host going away (a panel quitting) shows the window with the banner, and
// closing it then quits; the host coming back hides the banner again.
func TestDesktopTrayHostBanner(t *testing.T) {
	d := &fakeDesktop{host: true, hosts: make(chan bool)}
	app, f, _, quits := newDesktopApp(t, d)
	banner := findLabel(app.win.Content(), "No system tray")
	if banner == nil || app.desk.banner.Visible() {
		t.Fatalf("banner with a tray host: %v, shown %v", banner, app.desk.banner.Visible())
	}
	ui(app, app.closeWindow)
	if *quits != 0 || f.stopped != 0 {
		t.Fatalf("closing with a tray quit: quits %d, stopped %d", *quits, f.stopped)
	}

	d.hosts <- false // the panel quits
	eventually(t, app, "the banner after the host left", func() bool { return app.desk.banner.Visible() })
	if banner.Text != NoTrayText || app.HasTray() {
		t.Fatalf("banner %q, HasTray %v", banner.Text, app.HasTray())
	}
	d.hosts <- true
	eventually(t, app, "the banner hidden after the host came back", func() bool { return !app.desk.banner.Visible() })
	d.hosts <- false
	eventually(t, app, "the banner after the host left again", func() bool { return app.desk.banner.Visible() })
	ui(app, app.closeWindow)
	if *quits != 1 || f.stopped != 1 {
		t.Fatalf("closing without a tray did not quit: quits %d, stopped %d", *quits, f.stopped)
	}
}

// TestDesktopNoSessionBus: no session bus at all (no host, no changes ever): the banner is
// there from the start, HasTray says no (so the app does not start hidden), close quits.
func TestDesktopNoSessionBus(t *testing.T) {
	app, f, _, quits := newDesktopApp(t, &fakeDesktop{})
	if !app.desk.banner.Visible() || app.HasTray() {
		t.Fatalf("banner shown %v, HasTray %v", app.desk.banner.Visible(), app.HasTray())
	}
	if findLabel(app.win.Content(), NoTrayText) == nil {
		t.Fatal("no banner text in the window")
	}
	ui(app, app.closeWindow)
	if *quits != 1 || f.stopped != 1 {
		t.Fatalf("close did not quit: quits %d, stopped %d", *quits, f.stopped)
	}
}

// TestDesktopStartAtLogin: the Server tab's checkbox writes the entry, reads it again when
// the tab is shown (removed by hand: unchecked), and says why when it cannot be written.
func TestDesktopStartAtLogin(t *testing.T) {
	d := &fakeDesktop{host: true}
	app, _, _, _ := newDesktopApp(t, d)
	box := app.desk.login
	if box.Checked || findLabel(app.server.content, "") == nil {
		t.Fatal("checked before any entry")
	}
	ui(app, func() { test.Tap(box) })
	if !d.login || !box.Checked {
		t.Fatalf("after tap: entry %v, box %v", d.login, box.Checked)
	}

	d.setLogin(false) // the user deletes the file
	ui(app, func() {
		app.tabs.Select(app.tabs.Items[0])
		app.tabs.Select(app.serverTab)
	})
	if box.Checked {
		t.Fatal("the box still checked after the entry was removed")
	}

	d.loginErr = errors.New("autostart: cannot write /ro/autostart/io.superfluid.app.desktop: permission denied")
	ui(app, func() { test.Tap(box) })
	top := app.win.Canvas().Overlays().Top()
	if top == nil || findLabel(top, "permission denied") == nil {
		t.Fatal("no error dialog saying why the entry could not be written")
	}
	if box.Checked || d.login {
		t.Fatalf("box %v, entry %v after a failed write", box.Checked, d.login)
	}
}

// TestDesktopTrayIcon: the icon set on the tray follows the state: idle, loading while a
// model loads, generating during a reply, error when a model failed.
func TestDesktopTrayIcon(t *testing.T) {
	app, f, ta, _ := newDesktopApp(t, &fakeDesktop{host: true})
	if ta.lastIcon() != "tray-idle.png" || ta.menu == nil {
		t.Fatalf("icon %q, menu %v at start", ta.lastIcon(), ta.menu)
	}
	for _, step := range []struct {
		state, icon string
	}{{"loading", "tray-loading.png"}, {"loaded", "tray-idle.png"}, {"failed", "tray-error.png"}, {"unloaded", "tray-idle.png"}} {
		f.mu.Lock()
		f.models[0].State = step.state
		f.mu.Unlock()
		f.send(Event{Kind: EventModels, Model: f.models[0].ID})
		eventually(t, app, "icon "+step.icon+" for "+step.state, func() bool { return ta.lastIcon() == step.icon })
	}
	f.desktop.mu.Lock()
	f.desktop.generating = 1
	f.desktop.mu.Unlock()
	f.send(Event{Kind: EventActivity})
	eventually(t, app, "the generating icon", func() bool { return ta.lastIcon() == "tray-generating.png" })
	if ta.icons[0] == ta.icons[1] {
		t.Fatalf("the same state set the icon twice: %v", ta.icons)
	}
}

// TestDesktopTrayMenuAfterRegister: the tray registering late (fyne 2.7 then shows the first
// menu it was given) or again after a panel restart still shows the current server state, at
// any time after start (a timer that set the menu again only covered the first seconds).
func TestDesktopTrayMenuAfterRegister(t *testing.T) {
	app, f, ta, _ := newDesktopApp(t, &fakeDesktop{host: true})
	for _, running := range []bool{false, true} {
		f.mu.Lock()
		f.status.Running = running
		f.mu.Unlock()
		f.send(Event{Kind: EventServer})
		want := map[bool]string{false: "Stopped", true: "Running on 127.0.0.1:8453"}[running]
		eventually(t, app, want+" in the menu", func() bool {
			ta.register()
			ta.mu.Lock()
			defer ta.mu.Unlock()
			return len(ta.menu.Items) > 0 && ta.menu.Items[0].Label == want
		})
	}
}

// TestDesktopCloseAsksWhileWorkRuns: with no tray, closing the window while a download runs
// asks first, naming the download and saying it resumes at the next start; Keep running keeps
// the app and the download; closing again and Quit quits once. A reply streaming in the
// Playground and replies for API clients are named the same way.
func TestDesktopCloseAsksWhileWorkRuns(t *testing.T) {
	d := &fakeDesktop{}
	app, f, _, quits := newDesktopApp(t, d)
	ui(app, func() {
		app.models.pull("hf.co/owner/repo:Q4_K_M")
		app.closeWindow()
		app.closeWindow() // a second click does not stack a second dialog
	})
	top := app.win.Canvas().Overlays().Top()
	if *quits != 0 || f.stopped != 0 || top == nil {
		t.Fatalf("closing during a download: quits %d, stopped %d, dialog %v", *quits, f.stopped, top)
	}
	if findLabel(top, "the download of hf.co/owner/repo:Q4_K_M") == nil || findLabel(top, "resume where they stopped the next time superfluid starts") == nil {
		t.Fatal("the dialog does not name the download and that it resumes")
	}
	if n := len(app.win.Canvas().Overlays().List()); n != 1 {
		t.Fatalf("%d dialogs after two clicks", n)
	}
	ui(app, func() { test.Tap(findButton(top, "Keep running")) })
	if *quits != 0 || app.win.Canvas().Overlays().Top() != nil {
		t.Fatalf("Keep running: quits %d, dialog %v", *quits, app.win.Canvas().Overlays().Top())
	}

	f.gate = make(chan struct{}) // the reply hangs after its first word
	d.mu.Lock()
	d.generating = 3 // the Playground's and two for API clients
	d.mu.Unlock()
	ui(app, func() { app.Show("playground") })
	ui(app, func() { test.Type(app.playground.input, "Tell me a story") })
	ui(app, func() { test.Tap(app.playground.send) })
	eventually(t, app, "streaming", func() bool { return app.playground.reply != nil && app.playground.reply.Len() > 0 })
	ui(app, app.closeWindow)
	top = app.win.Canvas().Overlays().Top()
	if top == nil || findLabel(top, "the reply being written in the Playground") == nil || findLabel(top, "2 replies the server is writing for API clients") == nil {
		t.Fatal("the dialog does not name the Playground's reply and the API clients' replies")
	}
	ui(app, func() { test.Tap(findButton(top, "Quit")) })
	if *quits != 1 || f.stopped != 1 {
		t.Fatalf("Quit in the dialog: quits %d, stopped %d", *quits, f.stopped)
	}
	close(f.gate)
}

// TestDesktopHostComesWhileAsking: a tray host that starts while the quit question is up
// takes the question away (it said there is no tray), without quitting; closing then hides
// the window into the tray.
func TestDesktopHostComesWhileAsking(t *testing.T) {
	d := &fakeDesktop{hosts: make(chan bool)}
	app, f, _, quits := newDesktopApp(t, d)
	ui(app, func() {
		app.models.pull("hf.co/owner/repo:Q4_K_M")
		app.closeWindow()
	})
	if app.win.Canvas().Overlays().Top() == nil {
		t.Fatal("no quit question during a download")
	}
	d.hosts <- true
	eventually(t, app, "the question gone", func() bool { return app.win.Canvas().Overlays().Top() == nil })
	ui(app, app.closeWindow)
	if *quits != 0 || f.stopped != 0 || app.win.Canvas().Overlays().Top() != nil {
		t.Fatalf("quits %d, stopped %d, dialog %v", *quits, f.stopped, app.win.Canvas().Overlays().Top())
	}
}

// TestDesktopHostLeavesAsAppQuits: a tray host that goes away just as the app quits (the
// change already taken by the app, its UI update queued behind Quit) does not bring the
// window or its banner back once Quit ran.
func TestDesktopHostLeavesAsAppQuits(t *testing.T) {
	d := &fakeDesktop{host: true, hosts: make(chan bool)}
	app, _, _, quits := newDesktopApp(t, d)
	uiMu.Lock()      // the UI thread is busy (running Quit)
	d.hosts <- false // taken: its update waits for the UI
	app.Quit()
	uiMu.Unlock()
	// The queued update ends dropped (not a sleep, which passed whenever it came late).
	eventually(t, app, "the host's update dropped", func() bool { return app.dropped.Load() == 1 })
	ui(app, func() {
		if app.desk.banner.Visible() || *quits != 1 {
			t.Fatalf("after Quit: banner shown %v, quits %d", app.desk.banner.Visible(), *quits)
		}
	})
}
