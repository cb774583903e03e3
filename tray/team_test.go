package tray

import (
	"slices"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"
)

// newTeamTestApp is newTestApp with the fake in team mode: two lanes (one idle, one failed)
// and one booking of the first, running.
func newTeamTestApp(t *testing.T) (*App, *fakeController) {
	t.Helper()
	a := test.NewTempApp(t)
	f := newFake()
	now := time.Now()
	f.team = &fakeTeam{seq: 10,
		lanes: []TeamLane{
			{ID: "lane-1", Name: "big", Device: "cuda:0", Engine: "local", Model: "stories260K", State: LaneIdle},
			{ID: "lane-2", Name: "remote", Device: "remote", Engine: "openai", Model: "qwen3", Upstream: "http://gpu-box:8000/v1",
				HasKey: true, State: LaneFailed, Err: "connection refused"},
		},
		bookings: []Booking{{ID: "bk-1", Person: "alice", Lane: "big", Device: "cuda:0", Model: "stories260K",
			Start: now.Add(-time.Hour), End: now.Add(time.Hour), State: BookingApproved}},
	}
	uiMu.Lock()
	app := New(a, f, Icons{}, nil)
	app.Window().Resize(fyne.NewSize(860, 620))
	uiMu.Unlock()
	t.Cleanup(app.stop)
	return app, f
}

// overlay is the dialog on top of the window; nil when none is open.
func overlay(app *App) fyne.CanvasObject { return app.win.Canvas().Overlays().Top() }

// TestServerTabTeamOff: outside team mode the Server tab is as before, with a one-line hint,
// and has no Lanes or Bookings.
func TestServerTabTeamOff(t *testing.T) {
	app, _ := newTestApp(t)
	if app.team.tabs != nil || app.team.hint == nil || !strings.Contains(app.team.hint.Text, "team mode is off: start with --team") {
		t.Fatalf("team views outside team mode: %+v", app.team)
	}
	ui(app, func() { app.Show("lanes") })
	if app.tabs.Selected() == app.serverTab {
		t.Fatal(`Show("lanes") opened the Server tab outside team mode`)
	}
}

// TestLanesView: the Lanes sub-tab lists each lane's name, device, engine, model and state;
// Add (errors inline in the dialog, which stays open), Switch (a picker of the catalog's
// models; the row then shows the drain) and Remove (confirmed; a lane with a booking is refused
// inline) reach the controller.
func TestLanesView(t *testing.T) {
	app, f := newTeamTestApp(t)
	v := app.team.lanes
	ui(app, func() { app.Show("lanes") })
	if app.tabs.Selected() != app.serverTab || app.team.shown() != "lanes" {
		t.Fatalf("Show(lanes) shows %q", app.team.shown())
	}
	eventually(t, app, "the lanes are listed", func() bool { return len(v.rows) == 2 })
	ui(app, func() {
		big, remote := v.rows["big"], v.rows["remote"]
		if !strings.Contains(big.title.Text, "big · cuda:0 · local · stories260K") || !strings.HasPrefix(big.state.Text, "idle") {
			t.Fatalf("big: %q / %q", big.title.Text, big.state.Text)
		}
		if !strings.Contains(remote.title.Text, "http://gpu-box:8000/v1") || !strings.Contains(remote.title.Text, "key stored") ||
			!strings.Contains(remote.state.Text, "failed to start qwen3: connection refused") || remote.state.Importance != widget.DangerImportance {
			t.Fatalf("remote: %q / %q", remote.title.Text, remote.state.Text)
		}
	})

	// Add: a taken name is refused inline and the dialog keeps what was typed.
	ui(app, func() { test.Tap(v.add) })
	var form *laneForm
	ui(app, func() {
		form = v.form
		if form == nil || overlay(app) == nil {
			t.Fatal("Add lane opened no dialog")
		}
		if !form.upstream.Disabled() || !form.key.Disabled() || !slices.Contains(form.models, "stories260K") ||
			!slices.Equal(form.device.Options, []string{"cpu", "cuda:0", "remote"}) {
			t.Fatalf("the local form: upstream disabled %v, key disabled %v, models %v, devices %v",
				form.upstream.Disabled(), form.key.Disabled(), form.models, form.device.Options)
		}
	})
	ui(app, func() {
		test.Type(form.name, "big")
		form.device.SetSelected("cpu")
		form.model.SetText("stories260K")
		test.Tap(form.add)
	})
	eventually(t, app, "the taken name is refused inline", func() bool {
		return strings.Contains(form.msg.Text, "a lane already has this name: big") && form.msg.Importance == widget.DangerImportance
	})
	ui(app, func() {
		if overlay(app) == nil || form.name.Text != "big" {
			t.Fatal("a refused Add closed its dialog or lost what was typed")
		}
	})
	// An openai lane needs its URL: the form offers the URL and key, and the refusal is inline.
	ui(app, func() {
		form.name.SetText("vllm")
		form.engine.SetSelected("openai")
		form.device.SetSelected("remote")
		form.model.SetText("Qwen3-32B")
		test.Type(form.key, "sk-upstream")
		test.Tap(form.add)
	})
	eventually(t, app, "the missing URL is refused inline", func() bool { return strings.Contains(form.msg.Text, "needs --url") })
	ui(app, func() {
		test.Type(form.upstream, "http://gpu-box:8000/v1")
		test.Tap(form.add)
	})
	eventually(t, app, "the added lane is listed", func() bool { return v.rows["vllm"] != nil && overlay(app) == nil })
	ui(app, func() {
		if got := f.laneAt(2); got.Engine != "openai" || got.Upstream != "http://gpu-box:8000/v1" || !got.HasKey || got.Model != "Qwen3-32B" {
			t.Fatalf("added %+v", got)
		}
		if r := v.rows["vllm"]; !strings.HasPrefix(r.state.Text, "loading Qwen3-32B") || !strings.Contains(v.msg.Text, "Added lane vllm") {
			t.Fatalf("after Add: %q, %q", r.state.Text, v.msg.Text)
		}
		if strings.Contains(v.rows["vllm"].title.Text, "sk-upstream") {
			t.Fatal("the upstream key is shown")
		}
	})

	// Switch: the picker offers the catalog's models; an unknown one is refused inline; then the
	// row shows the drain.
	ui(app, func() { test.Tap(v.rows["big"].switchB) })
	var sw *switchForm
	ui(app, func() {
		sw = v.switchF
		if sw == nil || sw.model.Text != "stories260K" || !slices.Contains(sw.models, "hf.co/owner/tiny-GGUF:Q8_0") {
			t.Fatalf("switch dialog %+v", sw)
		}
	})
	ui(app, func() {
		sw.model.SetText("nope")
		test.Tap(sw.ok)
	})
	eventually(t, app, "an unknown model is refused inline", func() bool { return strings.Contains(sw.msg.Text, `unknown model "nope"`) })
	ui(app, func() {
		sw.model.SetText("hf.co/owner/tiny-GGUF:Q8_0")
		test.Tap(sw.ok)
	})
	eventually(t, app, "the row shows the drain", func() bool {
		return overlay(app) == nil && strings.HasPrefix(v.rows["big"].state.Text, "switching to hf.co/owner/tiny-GGUF:Q8_0: draining")
	})

	// Remove asks first; a lane with a booking running is refused, inline in the view.
	ui(app, func() { test.Tap(v.rows["big"].remov) })
	var confirm *widget.Button
	ui(app, func() {
		confirm = findButton(overlay(app), "Remove")
		if confirm == nil || lanesOf(f) != 3 {
			t.Fatal("no confirmation before removing")
		}
	})
	ui(app, func() { test.Tap(confirm) })
	eventually(t, app, "the booked lane's removal is refused inline", func() bool {
		return strings.Contains(v.msg.Text, "lane big is booked: alice's approved booking") && v.msg.Importance == widget.DangerImportance
	})
	ui(app, func() {
		if lanesOf(f) != 3 || v.rows["big"] == nil || v.rows["big"].remov.Disabled() {
			t.Fatal("a refused removal removed the lane or left its button disabled")
		}
	})
	// The error stays through refreshes, until the next action.
	app.team.poll("lanes")
	eventually(t, app, "the error is still shown", func() bool {
		return strings.Contains(v.msg.Text, "is booked") && strings.Contains(v.summary.Text, "3 lanes.")
	})
	ui(app, func() { test.Tap(v.rows["remote"].remov) })
	ui(app, func() { test.Tap(findButton(overlay(app), "Remove")) })
	eventually(t, app, "the lane is removed", func() bool { return v.rows["remote"] == nil && len(v.rows) == 2 })
	ui(app, func() {
		if !strings.Contains(v.msg.Text, "Removed lane remote") || v.msg.Importance == widget.DangerImportance {
			t.Fatalf("after Remove: %q", v.msg.Text)
		}
	})

	// Dismissing the confirmation removes nothing.
	ui(app, func() { test.Tap(v.rows["vllm"].remov) })
	ui(app, func() { test.Tap(findButton(overlay(app), "No")) })
	app.team.poll("lanes")
	if lanesOf(f) != 2 {
		t.Fatal("a dismissed confirmation removed the lane")
	}
}

// TestLanesViewReadError: lanes that cannot be read are said inline, not a crash.
func TestLanesViewReadError(t *testing.T) {
	app, f := newTeamTestApp(t)
	f.mu.Lock()
	f.team = nil // the controller now says team mode is off
	f.mu.Unlock()
	app.team.poll("lanes")
	eventually(t, app, "the error is shown", func() bool {
		return strings.Contains(app.team.lanes.summary.Text, "the lanes cannot be read: team mode is off") &&
			app.team.lanes.summary.Importance == widget.DangerImportance
	})
}

// TestBookingsView: the Bookings sub-tab lists who booked what (a lane or a whole device), the
// model, the window and the state; Book (a taken window's 409 and a bad start's 400 messages
// inline in the dialog, which stays open), Approve, Reject and Cancel (both confirmed) reach
// the controller, and an approval refused is said inline.
func TestBookingsView(t *testing.T) {
	app, f := newTeamTestApp(t)
	v := app.team.bookings
	ui(app, func() { app.Show("bookings") })
	eventually(t, app, "the booking is listed", func() bool { return len(v.rows) == 1 && len(v.lanes) == 2 })
	ui(app, func() {
		r := v.rows["bk-1"]
		if r.title.Text != "alice · lane big · stories260K" || !strings.Contains(r.window.Text, "(2h) · approved, running") {
			t.Fatalf("bk-1: %q / %q", r.title.Text, r.window.Text)
		}
		if r.approve.Visible() || r.reject.Visible() || r.cancel.Disabled() || !strings.Contains(v.summary.Text, "1 booking ahead.") {
			t.Fatalf("an approved booking's buttons: approve %v reject %v cancel %v; %q",
				r.approve.Visible(), r.reject.Visible(), r.cancel.Disabled(), v.summary.Text)
		}
	})

	// Book the lane alice holds: the 409 message, inline; the dialog stays open.
	ui(app, func() { test.Tap(v.book) })
	var form *bookingForm
	ui(app, func() {
		form = v.form
		if form == nil || overlay(app) == nil || form.start.Text != "now" || form.length.Text != "1h" {
			t.Fatalf("Book dialog %+v", form)
		}
		want := []string{"lane big (cuda:0, stories260K)", "lane remote (remote, qwen3)", "whole device cpu", "whole device cuda:0"}
		if !slices.Equal(form.target.Options, want) {
			t.Fatalf("targets %q, want %q", form.target.Options, want)
		}
	})
	ui(app, func() {
		form.target.SetSelected("lane big (cuda:0, stories260K)")
		test.Tap(form.ok)
	})
	eventually(t, app, "the taken window is refused inline", func() bool {
		return strings.Contains(form.msg.Text, "the window is taken: booking bk-1 (approved) holds lane big") &&
			form.msg.Importance == widget.DangerImportance
	})
	ui(app, func() {
		if overlay(app) == nil || bookingsOf(f) != 1 {
			t.Fatal("a refused booking closed its dialog or was booked")
		}
	})
	// A start that is no time: the 400 message, inline.
	ui(app, func() {
		form.start.SetText("tomorrowish")
		test.Tap(form.ok)
	})
	eventually(t, app, "the bad start is refused inline", func() bool { return strings.Contains(form.msg.Text, `time "tomorrowish" is not RFC 3339`) })
	// A whole device takes no model; in two hours the window is free.
	ui(app, func() {
		form.target.SetSelected("whole device cuda:0")
		form.start.SetText("+2h")
		form.length.SetText("30m")
	})
	ui(app, func() {
		if !form.model.Disabled() {
			t.Fatal("a whole-device booking offers a model")
		}
	})
	ui(app, func() { test.Tap(form.ok) })
	eventually(t, app, "the booking is made and listed", func() bool { return overlay(app) == nil && len(v.rows) == 2 })
	ui(app, func() {
		if b := f.bookingAt(1); b.Lane != "" || b.Device != "cuda:0" || b.Model != "" || b.End.Sub(b.Start) != 30*time.Minute {
			t.Fatalf("booked %+v", b)
		}
		if !strings.Contains(v.msg.Text, "Booked bk-11: whole device cuda:0 (approved)") {
			t.Fatalf("after Book: %q", v.msg.Text)
		}
	})

	// A pending booking: Approve; approving it again is refused inline.
	f.mu.Lock()
	f.team.bookings = append(f.team.bookings, Booking{ID: "bk-20", Person: "bob", Lane: "remote", Device: "remote",
		Start: time.Now().Add(3 * time.Hour), End: time.Now().Add(4 * time.Hour), State: BookingPending},
		Booking{ID: "bk-21", Person: "carol", Device: "cpu", Start: time.Now().Add(5 * time.Hour), End: time.Now().Add(6 * time.Hour), State: BookingPending})
	f.mu.Unlock()
	app.team.poll("bookings")
	eventually(t, app, "the pending bookings are listed", func() bool { return len(v.rows) == 4 })
	var approve *widget.Button
	ui(app, func() {
		if p := v.rows["bk-20"]; !p.approve.Visible() || !p.reject.Visible() || !strings.Contains(p.window.Text, "pending, waiting for an admin") ||
			!strings.Contains(v.summary.Text, "4 bookings ahead, 2 waiting for approval.") {
			t.Fatalf("a pending booking: %q; %q", p.window.Text, v.summary.Text)
		}
		approve = v.rows["bk-20"].approve
	})
	ui(app, func() { test.Tap(approve) })
	eventually(t, app, "bk-20 is approved", func() bool {
		return strings.Contains(v.msg.Text, "Booking bk-20 approved.") && !v.rows["bk-20"].approve.Visible()
	})
	ui(app, func() {
		if !strings.Contains(v.rows["bk-20"].window.Text, "approved by local") {
			t.Fatalf("approved: %q", v.rows["bk-20"].window.Text)
		}
	})
	ui(app, func() { v.decide("bk-20", "approve", app.c.ApproveBooking) }) // another admin was first
	eventually(t, app, "approving twice is refused inline", func() bool {
		return strings.Contains(v.msg.Text, "approve bk-20: booking bk-20 is approved, not pending") && v.msg.Importance == widget.DangerImportance
	})

	// Reject asks first.
	ui(app, func() { test.Tap(v.rows["bk-21"].reject) })
	var confirm *widget.Button
	ui(app, func() {
		confirm = findButton(overlay(app), "Reject booking")
		if confirm == nil || f.bookingAt(3).State != BookingPending {
			t.Fatal("no confirmation before rejecting")
		}
	})
	ui(app, func() { test.Tap(confirm) })
	eventually(t, app, "bk-21 is rejected", func() bool {
		return f.bookingAt(3).State == BookingRejected && strings.Contains(v.rows["bk-21"].window.Text, "rejected by local")
	})

	// Cancel asks first and says a running booking ends now; Keep it keeps it.
	ui(app, func() { test.Tap(v.rows["bk-1"].cancel) })
	var top fyne.CanvasObject
	ui(app, func() {
		top = overlay(app)
		if findButton(top, "Cancel booking") == nil || findButton(top, "Keep it") == nil {
			t.Fatal("no confirmation before cancelling")
		}
	})
	ui(app, func() { test.Tap(findButton(top, "Keep it")) })
	if f.bookingAt(0).State != BookingApproved {
		t.Fatal("Keep it cancelled the booking")
	}
	ui(app, func() { test.Tap(v.rows["bk-1"].cancel) })
	ui(app, func() { test.Tap(findButton(overlay(app), "Cancel booking")) })
	eventually(t, app, "bk-1 is cancelled", func() bool {
		return f.bookingAt(0).State == BookingCancelled && v.rows["bk-1"].cancel.Disabled() && strings.Contains(v.msg.Text, "bk-1 cancelled")
	})

	// With alice's booking cancelled, her lane can be removed.
	if err := f.RemoveLane("big"); err != nil {
		t.Fatalf("removing the lane after its booking was cancelled: %v", err)
	}
}

// TestBookingWindow: the window in local time, the day of the end only when it differs.
func TestBookingWindow(t *testing.T) {
	start := time.Date(2026, 6, 1, 9, 0, 0, 0, time.Local)
	b := Booking{Start: start, End: start.Add(2 * time.Hour), State: BookingApproved, DecidedBy: "root"}
	if got := bookingWindow(b, start.Add(-time.Hour)); got != "Mon Jun 1 09:00 – 11:00 (2h) · approved by root" {
		t.Fatalf("ahead: %q", got)
	}
	b.End = start.Add(24 * time.Hour)
	if got := bookingWindow(b, start.Add(time.Hour)); got != "Mon Jun 1 09:00 – Jun 2 09:00 (24h) · approved by root, running" {
		t.Fatalf("running, overnight: %q", got)
	}
	for d, want := range map[time.Duration]string{45 * time.Minute: "45m", 90 * time.Minute: "1h30m", 8 * time.Hour: "8h", 65 * time.Minute: "1h05m"} {
		if got := length(d); got != want {
			t.Errorf("length(%s) = %q, want %q", d, got, want)
		}
	}
}

func lanesOf(f *fakeController) int    { n, _ := f.counts(); return n }
func bookingsOf(f *fakeController) int { _, n := f.counts(); return n }
