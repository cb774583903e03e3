package tray

import (
	"fmt"
	"strings"
	"sync/atomic"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// NoTrayText is the banner shown while no tray host is there to show the icon: without one,
// hiding the window would leave the app running with no way back to it.
const NoTrayText = "No system tray on this desktop: closing this window quits superfluid"

// desktopView is the app's place on the desktop: the no-tray banner above the tabs and the
// start-at-login checkbox of the Server tab.
type desktopView struct {
	a      *App
	banner *fyne.Container
	text   *widget.Label
	login  *widget.Check
	host   atomic.Bool // a tray host is there now (as the controller last said)
	// reading is set while the checkbox is set from the file, so that it does not write back.
	reading bool
	changes <-chan bool
}

func newDesktopView(a *App) *desktopView {
	v := &desktopView{a: a}
	v.text = widget.NewLabel(NoTrayText)
	v.text.Importance = widget.WarningImportance
	v.banner = container.NewHBox(widget.NewIcon(theme.WarningIcon()), v.text)
	v.login = widget.NewCheck("Start superfluid when I log in", func(on bool) {
		if v.reading {
			return
		}
		if err := a.c.SetStartAtLogin(on); err != nil {
			a.showError(err)
		}
		v.readLogin() // the box says what the desktop's entry now is, written or not
	})
	v.readLogin()
	host, changes := a.c.TrayHost()
	v.host.Store(host)
	v.changes = changes
	v.showHost()
	return v
}

// readLogin sets the checkbox from the desktop's autostart entry (removed by hand: off).
func (v *desktopView) readLogin() {
	on := v.a.c.StartAtLogin()
	if on == v.login.Checked {
		return
	}
	v.reading = true
	v.login.SetChecked(on)
	v.reading = false
}

// showHost shows the banner while no tray host is there.
func (v *desktopView) showHost() {
	if v.host.Load() {
		v.banner.Hide()
	} else {
		v.banner.Show()
	}
}

// watchHost follows the tray host: one that goes away brings the window back with the
// banner, since the icon that opened it is gone; one that comes back hides the banner.
func (v *desktopView) watchHost(done <-chan struct{}) {
	if v.changes == nil {
		return
	}
	go func() {
		for {
			select {
			case <-done:
				return
			case host, ok := <-v.changes:
				if !ok {
					return
				}
				v.a.do(func() {
					v.host.Store(host)
					v.showHost()
					if !host {
						v.a.win.Show()
					}
					if host && v.a.confirm != nil {
						// The quit question no longer holds: closing now hides into the tray.
						v.a.confirm.Hide()
					}
				})
			}
		}
	}()
}

// hidesIntoTray reports whether closing the window hides it (a tray icon brings it back)
// rather than quitting.
func (t *App) hidesIntoTray() bool { return t.hasTray && t.desk.host.Load() }

// HasTray reports whether the tray icon is there now: where it is not, the app must not start
// hidden (nothing would bring the window back).
func (t *App) HasTray() bool { return t.hidesIntoTray() }

// closeWindow is the window's close button: hidden into the tray while a tray icon can bring
// it back, else it quits (hidden with no icon, the app would run on out of reach), asking
// first while that would stop a download or a reply.
func (t *App) closeWindow() {
	if t.hidesIntoTray() {
		t.win.Hide()
		return
	}
	running := t.runningWork()
	if len(running) == 0 {
		t.Quit()
		return
	}
	if t.confirm != nil {
		return // already asking
	}
	text := widget.NewLabel("There is no system tray to keep superfluid running, so closing this window quits it. That stops:\n\n• " +
		strings.Join(running, "\n• "))
	text.Wrapping = fyne.TextWrapWord
	t.confirm = dialog.NewCustomConfirm("Quit superfluid?", "Quit", "Keep running", text, func(quit bool) {
		t.confirm = nil
		if quit {
			t.Quit()
		}
	}, t.win)
	t.confirm.Resize(fyne.NewSize(520, 0))
	t.confirm.Show()
}

// runningWork names what quitting would stop, as the quit confirmation says it: the Models
// tab's download (its record stays, so the next start resumes it from the partial file), the
// Playground's reply and the replies the server is writing for API clients.
func (t *App) runningWork() []string {
	var out []string
	if t.models.pulling != nil {
		line := "the download of " + strings.TrimSpace(t.models.ref.Text)
		if n := len(t.models.queued); n > 0 {
			line += fmt.Sprintf(" and %d waiting after it", n)
		}
		out = append(out, line+": downloads resume where they stopped the next time superfluid starts")
	}
	clients := t.c.Generating()
	if t.playground.cancel != nil {
		out = append(out, "the reply being written in the Playground: it ends where it is now")
		clients-- // the Playground's own generation is one of those the server counts
	}
	switch {
	case clients == 1:
		out = append(out, "a reply the server is writing for an API client: it is cut off")
	case clients > 1:
		out = append(out, fmt.Sprintf("%d replies the server is writing for API clients: they are cut off", clients))
	}
	return out
}
