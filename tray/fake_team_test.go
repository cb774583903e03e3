package tray

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The fake's team mode: lanes and bookings in memory, refusing as the real controller does
// (its messages are the lanes manager's and the bookings service's).

// fakeTeam is the fake's team mode state; nil is team mode off.
type fakeTeam struct {
	lanes    []TeamLane
	bookings []Booking
	seq      int
	// removeErr, when set, is what RemoveLane fails with.
	removeErr error
}

func (f *fakeController) Team() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.team != nil
}

func (f *fakeController) teamOn() (*fakeTeam, error) {
	if f.team == nil {
		return nil, errors.New("team mode is off: start superfluid with --team")
	}
	return f.team, nil
}

func (f *fakeController) Lanes() ([]TeamLane, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, err := f.teamOn()
	if err != nil {
		return nil, err
	}
	return append([]TeamLane(nil), t.lanes...), nil
}

func (f *fakeController) LaneDevices() []string { return []string{"cpu", "cuda:0", "remote"} }

func (f *fakeController) AddLane(n NewTeamLane) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, err := f.teamOn()
	if err != nil {
		return err
	}
	for _, l := range t.lanes {
		if l.Name == n.Name {
			return fmt.Errorf("a lane already has this name: %s", n.Name)
		}
	}
	switch {
	case n.Engine == "openai" && n.URL == "":
		return errors.New("invalid lane: an openai lane needs --url, the server's base URL")
	case n.Model == "":
		return errors.New("unknown model: a lane needs a model")
	case n.Device == "" && n.Engine != "openai":
		return errors.New(`unknown device "": this machine has [cpu cuda:0]`)
	}
	t.seq++
	t.lanes = append(t.lanes, TeamLane{ID: fmt.Sprintf("lane-%d", t.seq), Name: n.Name, Device: n.Device, Engine: n.Engine,
		Model: n.Model, Upstream: n.URL + n.Command, HasKey: n.UpstreamKey != "", State: LaneLoading})
	return nil
}

func (f *fakeController) SwitchLane(lane, model string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, err := f.teamOn()
	if err != nil {
		return err
	}
	for i := range t.lanes {
		if l := &t.lanes[i]; l.Name == lane {
			if l.Engine == "local" && !f.hasModel(model) {
				return fmt.Errorf("unknown model %q: no such model", model)
			}
			l.Model, l.State = model, LaneSwitching // two requests still run on the old model
			return nil
		}
	}
	return fmt.Errorf("no such lane: %s", lane)
}

func (f *fakeController) hasModel(id string) bool {
	for _, m := range f.models {
		if m.ID == id {
			return true
		}
	}
	return false
}

func (f *fakeController) RemoveLane(lane string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, err := f.teamOn()
	if err != nil {
		return err
	}
	if t.removeErr != nil {
		return t.removeErr
	}
	for _, b := range t.bookings {
		if b.Lane == lane && (b.State == BookingPending || b.State == BookingApproved) {
			return fmt.Errorf("lane %s is booked: %s's %s booking until %s (running); cancel the booking in Bookings first",
				lane, b.Person, b.State, b.End.Local().Format("Jan 2 15:04"))
		}
	}
	for i, l := range t.lanes {
		if l.Name == lane {
			t.lanes = append(t.lanes[:i], t.lanes[i+1:]...)
			return nil
		}
	}
	return fmt.Errorf("no such lane: %s", lane)
}

func (f *fakeController) Bookings() ([]Booking, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, err := f.teamOn()
	if err != nil {
		return nil, err
	}
	return append([]Booking(nil), t.bookings...), nil
}

// Book accepts "now" or "+DURATION" starts; a window overlapping a pending or approved
// booking of the same lane or device is the service's 409 booking_conflict message.
func (f *fakeController) Book(nb NewBooking) (Booking, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, err := f.teamOn()
	if err != nil {
		return Booking{}, err
	}
	now := time.Now()
	start := now
	if nb.Start != "now" {
		d, err := time.ParseDuration(strings.TrimPrefix(nb.Start, "+"))
		if err != nil {
			return Booking{}, fmt.Errorf("the start: time %q is not RFC 3339 (2026-06-01T09:00:00Z), \"now\" or \"+2h\"", nb.Start)
		}
		start = now.Add(d)
	}
	if start.Before(now.Add(-time.Minute)) {
		return Booking{}, fmt.Errorf("the booking starts in the past (%s; it is now %s)", start.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	length, err := time.ParseDuration(nb.Length)
	if err != nil {
		return Booking{}, fmt.Errorf("the length %q is not a duration such as 30m, 2h or 1h30m", nb.Length)
	}
	b := Booking{Person: "local", Lane: nb.Lane, Device: nb.Device, Model: nb.Model, Start: start, End: start.Add(length), State: BookingApproved}
	for _, l := range t.lanes {
		if l.Name == nb.Lane {
			b.Device = l.Device
		}
	}
	for _, o := range t.bookings {
		held := o.State == BookingPending || o.State == BookingApproved
		same := o.Device == b.Device && (o.Lane == "" || b.Lane == "" || o.Lane == b.Lane)
		if held && same && o.Start.Before(b.End) && b.Start.Before(o.End) {
			return Booking{}, fmt.Errorf("the window is taken: booking %s (%s) holds lane %s from %s to %s", o.ID, o.State, o.Lane,
				o.Start.Format(time.RFC3339), o.End.Format(time.RFC3339))
		}
	}
	t.seq++
	b.ID = fmt.Sprintf("bk-%d", t.seq)
	t.bookings = append(t.bookings, b)
	return b, nil
}

func (f *fakeController) decide(id string, from []string, to string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, err := f.teamOn()
	if err != nil {
		return err
	}
	for i := range t.bookings {
		if b := &t.bookings[i]; b.ID == id {
			for _, st := range from {
				if b.State == st {
					b.State = to
					if to != BookingCancelled {
						b.DecidedBy = "local"
					}
					return nil
				}
			}
			return fmt.Errorf("booking %s is %s, not %s", id, b.State, strings.Join(from, " or "))
		}
	}
	return fmt.Errorf("no booking %s", id)
}

func (f *fakeController) ApproveBooking(id string) error {
	return f.decide(id, []string{BookingPending}, BookingApproved)
}

func (f *fakeController) RejectBooking(id string) error {
	return f.decide(id, []string{BookingPending}, BookingRejected)
}

func (f *fakeController) CancelBooking(id string) error {
	return f.decide(id, []string{BookingPending, BookingApproved}, BookingCancelled)
}

// bookingAt, laneAt and their counts read the fake's state for a test, under its lock.
func (f *fakeController) bookingAt(i int) Booking {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.team.bookings[i]
}

func (f *fakeController) laneAt(i int) TeamLane {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.team.lanes[i]
}

func (f *fakeController) counts() (lanes, bookings int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.team.lanes), len(f.team.bookings)
}
