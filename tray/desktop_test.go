package tray

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"
)

// trayTestApp is fyne's test app with a system tray (desktop.App), recording what the app
// sets on it, as the real driver would show it.
type trayTestApp struct {
	fyne.App
	mu    sync.Mutex
	menu  *fyne.Menu
	icons []string // the names of the icons set, in order
}

func (a *trayTestApp) SetSystemTrayMenu(m *fyne.Menu) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.menu = m
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

// findLabel looks for a label whose text contains text in o and what it contains.
func findLabel(o fyne.CanvasObject, text string) *widget.Label {
	if l, ok := o.(*widget.Label); ok && strings.Contains(l.Text, text) {
		return l
	}
	var children []fyne.CanvasObject
	switch w := o.(type) {
	case *fyne.Container:
		children = w.Objects
	case fyne.Widget:
		children = test.WidgetRenderer(w).Objects()
	}
	for _, c := range children {
		if l := findLabel(c, text); l != nil {
			return l
		}
	}
	return nil
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

// TestDesktopTrayMenuResync: a menu put back on the tray after start (fyne 2.7 restores the
// first menu it was given once the tray registers on the bus) is replaced by the current one
// within the first seconds.
func TestDesktopTrayMenuResync(t *testing.T) {
	app, _, ta, _ := newDesktopApp(t, &fakeDesktop{host: true})
	ta.SetSystemTrayMenu(fyne.NewMenu("", fyne.NewMenuItem("Stopped", nil)))
	eventually(t, app, "the current menu back on the tray", func() bool {
		ta.mu.Lock()
		defer ta.mu.Unlock()
		return len(ta.menu.Items) > 0 && ta.menu.Items[0].Label == "Running on 127.0.0.1:8453"
	})
}
