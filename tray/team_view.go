package tray

import (
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// teamViews are the Server tab's team mode parts: in team mode the tab has three sub-tabs
// (Status: the server as ever; Lanes; Bookings), refreshed as the Status sub-tab is; outside
// it the tab is as ever, with a one-line hint beside Start and Stop.
type teamViews struct {
	app         *App
	on          bool
	tabs        *container.AppTabs // nil outside team mode
	statusTab   *container.TabItem
	lanesTab    *container.TabItem
	bookingsTab *container.TabItem
	lanes       *lanesView
	bookings    *bookingsView
	hint        *widget.Label // outside team mode
}

// teamOffHint is what the Server tab says outside team mode.
const teamOffHint = "Lanes and bookings: team mode is off: start with --team"

// newServerTab is the Server tab's content around the server view.
func newServerTab(a *App) (*teamViews, fyne.CanvasObject) {
	tv := &teamViews{app: a, on: a.c.Team()}
	if !tv.on {
		tv.hint = widget.NewLabel(teamOffHint)
		tv.hint.Importance = widget.LowImportance
		a.server.buttons.Add(tv.hint) // beside Start and Stop: it takes no room from the request log
		return tv, a.server.content
	}
	tv.lanes = newLanesView(a)
	tv.bookings = newBookingsView(a)
	tv.statusTab = container.NewTabItemWithIcon("Status", theme.InfoIcon(), a.server.content)
	tv.lanesTab = container.NewTabItemWithIcon("Lanes", theme.ListIcon(), tv.lanes.content)
	tv.bookingsTab = container.NewTabItemWithIcon("Bookings", theme.HistoryIcon(), tv.bookings.content)
	tv.tabs = container.NewAppTabs(tv.statusTab, tv.lanesTab, tv.bookingsTab)
	tv.tabs.OnSelected = func(*container.TabItem) {
		shown := tv.shown()
		go tv.poll(shown)
	}
	return tv, tv.tabs
}

// shown is the team sub-tab on screen ("" for none); call it on the UI thread.
func (tv *teamViews) shown() string {
	if tv == nil || tv.tabs == nil {
		return ""
	}
	switch tv.tabs.Selected() {
	case tv.lanesTab:
		return "lanes"
	case tv.bookingsTab:
		return "bookings"
	}
	return ""
}

// poll reads what the shown sub-tab lists (off the UI thread) and redraws it.
func (tv *teamViews) poll(shown string) {
	if tv == nil || !tv.on {
		return
	}
	switch shown {
	case "lanes":
		lanes, err := tv.app.c.Lanes()
		tv.app.do(func() { tv.lanes.show(lanes, err) })
	case "bookings":
		list, err := tv.app.c.Bookings()
		lanes, _ := tv.app.c.Lanes()
		tv.app.do(func() { tv.bookings.show(list, lanes, err) })
	}
}

// selectSub shows a team sub-tab, "status", "lanes" or "bookings", and reports whether there
// is one by that name.
func (tv *teamViews) selectSub(name string) bool {
	if tv == nil || tv.tabs == nil {
		return false
	}
	item := map[string]*container.TabItem{"status": tv.statusTab, "lanes": tv.lanesTab, "bookings": tv.bookingsTab}[strings.ToLower(name)]
	if item != nil {
		tv.tabs.Select(item)
	}
	return item != nil
}

// act runs fn off the UI thread (a lane's removal waits for its requests to drain), then done
// with its error on the UI thread, then polls the shown sub-tab.
func (tv *teamViews) act(fn func() error, done func(error)) {
	go func() {
		err := fn()
		tv.app.do(func() { done(err) })
		var shown string
		tv.app.doAndWait(func() { shown = tv.shown() })
		tv.poll(shown)
	}()
}

// message is a label for a view's inline messages: errors in the danger colour.
type message struct{ *widget.Label }

// It is hidden until it has something to say.
func newMessage() message {
	l := widget.NewLabel("")
	l.Wrapping = fyne.TextWrapWord
	l.Hide()
	return message{l}
}

func (m message) info(text string) {
	m.Importance = widget.MediumImportance
	m.SetText(text)
	m.Show()
}

func (m message) fail(err error) {
	m.Importance = widget.DangerImportance
	m.SetText(err.Error())
	m.Show()
}

// modelIDs are the catalog's model ids, for the model pickers.
func (a *App) modelIDs() []string {
	var ids []string
	for _, m := range a.c.Models() {
		ids = append(ids, m.ID)
	}
	return ids
}
