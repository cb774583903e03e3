package tray

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// bookingsView is the Server tab's Bookings sub-tab (team mode): the bookings not ended yet
// (who, the lane or whole device, the model, the window, the state), Book (a form in a dialog),
// and per booking Approve and Reject (pending ones; the desktop is this machine's admin) and
// Cancel (confirmed). Errors are shown inline.
type bookingsView struct {
	app *App
	// summary says how many bookings there are (or why they cannot be read); msg what the last
	// action did, or why it failed.
	summary, msg message
	list         *fyne.Container
	rows         map[string]*bookingRow // by booking id
	order        []string
	book         *widget.Button
	form         *bookingForm // the Book dialog open last (tests read it)
	lanes        []TeamLane   // for the Book form's targets
	content      fyne.CanvasObject
}

// bookingRow is one booking in the list.
type bookingRow struct {
	booking                 Booking
	title, window           *widget.Label
	approve, reject, cancel *widget.Button
}

func newBookingsView(a *App) *bookingsView {
	v := &bookingsView{app: a, summary: newMessage(), msg: newMessage(), list: container.NewVBox(), rows: map[string]*bookingRow{}}
	v.book = widget.NewButtonWithIcon("Book", theme.ContentAddIcon(), v.openBook)
	help := widget.NewLabel("A booking holds a lane (loading its model at the start) or a whole device for a window: " +
		"during it, others get 403 gpu_reserved. Bookings made here are this machine's admin's and need no approval.")
	help.Wrapping = fyne.TextWrapWord
	top := container.NewVBox(
		container.NewBorder(nil, nil, widget.NewLabelWithStyle("Bookings", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), v.book),
		widget.NewSeparator(), help, v.summary.Label, v.msg.Label)
	v.content = container.NewBorder(top, nil, nil, nil, container.NewVScroll(v.list))
	v.summary.info("Reading the bookings…")
	return v
}

// show redraws the list from list (err: why it could not be read); lanes are the Book form's.
func (v *bookingsView) show(list []Booking, lanes []TeamLane, err error) {
	if lanes != nil {
		v.lanes = lanes
	}
	if err != nil {
		v.summary.fail(fmt.Errorf("the bookings cannot be read: %w", err))
		return
	}
	ids := make([]string, 0, len(list))
	for _, b := range list {
		ids = append(ids, b.ID)
	}
	if strings.Join(ids, ",") != strings.Join(v.order, ",") || len(v.rows) != len(list) {
		v.rows, v.order = map[string]*bookingRow{}, ids
		v.list.RemoveAll()
		for _, b := range list {
			r := v.newRow(b)
			v.rows[b.ID] = r
			v.list.Add(container.NewBorder(nil, nil, nil, container.NewCenter(container.NewHBox(r.approve, r.reject, r.cancel)),
				container.NewVBox(r.title, r.window)))
			v.list.Add(widget.NewSeparator())
		}
		v.list.Refresh()
	}
	now := time.Now()
	for _, b := range list {
		v.rows[b.ID].set(b, now)
	}
	pending := 0
	for _, b := range list {
		if b.State == BookingPending {
			pending++
		}
	}
	switch {
	case len(list) == 0:
		v.summary.info("No bookings ahead: Book holds a lane or a whole device for a while.")
	case pending > 0:
		v.summary.info(fmt.Sprintf("%d %s ahead, %d waiting for approval.", len(list), plural(len(list), "booking", "bookings"), pending))
	default:
		v.summary.info(fmt.Sprintf("%d %s ahead.", len(list), plural(len(list), "booking", "bookings")))
	}
}

func (v *bookingsView) newRow(b Booking) *bookingRow {
	r := &bookingRow{title: widget.NewLabel(""), window: widget.NewLabel("")}
	r.title.TextStyle.Bold = true
	r.title.Truncation = fyne.TextTruncateEllipsis
	r.window.Truncation = fyne.TextTruncateEllipsis
	id := b.ID
	r.approve = widget.NewButtonWithIcon("Approve", theme.ConfirmIcon(), func() { v.decide(id, "approve", v.app.c.ApproveBooking) })
	r.reject = widget.NewButtonWithIcon("Reject", theme.CancelIcon(), func() { v.confirm(v.rows[id].booking, "Reject", v.app.c.RejectBooking) })
	r.cancel = widget.NewButtonWithIcon("Cancel", theme.DeleteIcon(), func() { v.confirm(v.rows[id].booking, "Cancel", v.app.c.CancelBooking) })
	return r
}

func (r *bookingRow) set(b Booking, now time.Time) {
	r.booking = b
	r.title.SetText(bookingTitle(b))
	r.window.SetText(bookingWindow(b, now))
	// Approve and Reject are for pending bookings only; Cancel for those not over.
	pending, open := b.State == BookingPending, b.State == BookingPending || b.State == BookingApproved
	for _, x := range []*widget.Button{r.approve, r.reject} {
		if pending {
			x.Show()
		} else {
			x.Hide()
		}
	}
	if open {
		r.cancel.Enable()
	} else {
		r.cancel.Disable()
	}
}

// bookingTitle is "alice · lane big · qwen3-32b" or "bob · whole device cuda:0".
func bookingTitle(b Booking) string {
	parts := []string{b.Person}
	if b.Lane == "" {
		parts = append(parts, "whole device "+b.Device)
	} else {
		parts = append(parts, "lane "+b.Lane)
	}
	if b.Model != "" {
		parts = append(parts, b.Model)
	}
	return strings.Join(parts, " · ")
}

// bookingWindow is "Jun 2 09:00 – 11:00 (2h) · approved, running".
func bookingWindow(b Booking, now time.Time) string {
	start, end := b.Start.Local(), b.End.Local()
	endText := end.Format("15:04")
	if end.YearDay() != start.YearDay() || end.Year() != start.Year() {
		endText = end.Format("Jan 2 15:04")
	}
	state := b.State
	if b.DecidedBy != "" {
		state += " by " + b.DecidedBy
	}
	switch {
	case b.State == BookingApproved && !now.Before(b.Start) && now.Before(b.End):
		state += ", running"
	case b.State == BookingPending:
		state += ", waiting for an admin"
	}
	return fmt.Sprintf("%s – %s (%s) · %s", start.Format("Mon Jan 2 15:04"), endText, length(b.End.Sub(b.Start)), state)
}

// length is a booking's length as people write it: "2h", "1h30m", "45m".
func length(d time.Duration) string {
	d = d.Round(time.Minute)
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	switch {
	case h == 0:
		return fmt.Sprintf("%dm", m)
	case m == 0:
		return fmt.Sprintf("%dh", h)
	}
	return fmt.Sprintf("%dh%02dm", h, m)
}

// pastTense words what decide did.
var pastTense = map[string]string{"approve": "approved", "reject": "rejected", "cancel": "cancelled"}

// decide runs a booking's approval (no confirmation: it can be cancelled after).
func (v *bookingsView) decide(id, verb string, fn func(string) error) {
	v.app.team.act(func() error { return fn(id) }, func(err error) {
		if err != nil {
			v.msg.fail(fmt.Errorf("%s %s: %w", verb, id, err))
			return
		}
		v.msg.info(fmt.Sprintf("Booking %s %s.", id, pastTense[verb]))
	})
}

// confirm asks before rejecting or cancelling a booking (action is "Reject" or "Cancel").
func (v *bookingsView) confirm(b Booking, action string, fn func(string) error) {
	text := fmt.Sprintf("%s's booking of %s, %s. This cannot be undone.", b.Person, strings.TrimPrefix(bookingTitle(b), b.Person+" · "),
		bookingWindow(b, time.Now()))
	if action == "Cancel" && b.State == BookingApproved && !time.Now().Before(b.Start) {
		text += " It is running: it ends now, and the time used still counts."
	}
	d := dialog.NewConfirm(action+" this booking?", text, func(ok bool) {
		if ok {
			v.decide(b.ID, strings.ToLower(action), fn)
		}
	}, v.app.win)
	d.SetConfirmText(action + " booking")
	d.SetDismissText("Keep it")
	d.Show()
}

// bookingForm is the Book dialog.
type bookingForm struct {
	target *widget.Select
	model  *widget.SelectEntry
	start  *widget.Entry
	length *widget.SelectEntry
	msg    message
	ok     *widget.Button
	dialog *dialog.CustomDialog
	// targets map the target picker's choices to a lane (by name) or a device to book whole.
	targets map[string]NewBooking
}

func (v *bookingsView) openBook() {
	f := &bookingForm{model: widget.NewSelectEntry(v.app.modelIDs()), start: widget.NewEntry(),
		length: widget.NewSelectEntry([]string{"30m", "1h", "2h", "4h", "8h"}), msg: newMessage(), targets: map[string]NewBooking{}}
	var choices []string
	for _, l := range v.lanes {
		c := fmt.Sprintf("lane %s (%s, %s)", l.Name, l.Device, l.Model)
		choices = append(choices, c)
		f.targets[c] = NewBooking{Lane: l.Name}
	}
	for _, d := range v.app.c.LaneDevices() {
		if d == "remote" {
			continue // a remote server is not this machine's to hold
		}
		c := "whole device " + d
		choices = append(choices, c)
		f.targets[c] = NewBooking{Device: d}
	}
	f.target = widget.NewSelect(choices, func(c string) {
		if f.targets[c].Lane == "" {
			f.model.SetText("")
			f.model.Disable() // a whole-device booking serves no model: it is for one's own job
		} else {
			f.model.Enable()
		}
	})
	f.target.PlaceHolder = "a lane, or a whole device"
	f.model.SetPlaceHolder("optional: the model the lane loads at the start")
	f.start.SetText("now")
	f.start.SetPlaceHolder("now, +1h, or " + time.Now().Add(time.Hour).Format("2006-01-02 15:04"))
	f.length.SetText("1h")
	form := widget.NewForm(
		widget.NewFormItem("Book", f.target),
		widget.NewFormItem("Model", f.model),
		widget.NewFormItem("Start", f.start),
		widget.NewFormItem("Length", f.length),
	)
	f.ok = widget.NewButtonWithIcon("Book", theme.ConfirmIcon(), func() { v.submitBook(f) })
	f.ok.Importance = widget.HighImportance
	cancel := widget.NewButtonWithIcon("Cancel", theme.CancelIcon(), func() { f.dialog.Hide() })
	hint := widget.NewLabel("Start: now, +1h or " + time.Now().Add(time.Hour).Format("2006-01-02 15:04") +
		" (local time). Length: 30m, 2h, 1h30m. A window someone holds is refused.")
	hint.Importance = widget.LowImportance
	hint.Wrapping = fyne.TextWrapWord
	f.dialog = dialog.NewCustomWithoutButtons("Book a lane or a device", container.NewVBox(form, hint, f.msg.Label), v.app.win)
	f.dialog.SetButtons([]fyne.CanvasObject{cancel, f.ok})
	f.dialog.Resize(fyne.NewSize(620, 400))
	v.form = f
	f.dialog.Show()
}

func (v *bookingsView) submitBook(f *bookingForm) {
	nb, ok := f.targets[f.target.Selected]
	if !ok {
		f.msg.fail(errors.New("pick what to book: a lane, or a whole device"))
		return
	}
	nb.Model, nb.Start, nb.Length = strings.TrimSpace(f.model.Text), strings.TrimSpace(f.start.Text), strings.TrimSpace(f.length.Text)
	f.ok.Disable()
	var made Booking
	v.app.team.act(func() error {
		b, err := v.app.c.Book(nb)
		made = b
		return err
	}, func(err error) {
		f.ok.Enable()
		if err != nil {
			f.msg.fail(err) // a taken window (409) or a bad one (400): the dialog stays open
			return
		}
		f.dialog.Hide()
		v.msg.info(fmt.Sprintf("Booked %s: %s (%s).", made.ID, strings.TrimPrefix(bookingTitle(made), made.Person+" · "), made.State))
	})
}
