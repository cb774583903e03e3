package desktop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/bookings"
	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/store"
	"github.com/superfluid/superfluid/tray"
)

// Team is team mode's serving floor as the desktop drives it: the same lanes manager and
// bookings service the admin API (/v1/admin/lanes, /v1/bookings) calls, and the people's audit
// log. The desktop acts as this machine's admin, as the command line does (bookings.Local).
type Team struct {
	Lanes    *lanes.Manager
	Devices  []lanes.Device
	Bookings *bookings.Service
	// People keeps the audit log. The desktop's lane changes are recorded by the lanes
	// manager's audit hook and its bookings by the bookings service's, both marked via Via.
	People *people.Service
}

// Via is the audit log's "via" of the desktop's changes.
const Via = "desktop"

// removeWait bounds how long RemoveLane waits for a lane's running requests (the lane serves
// nothing more meanwhile, and is removed once they finish even after the wait).
const removeWait = 30 * time.Second

var errNoTeam = errors.New("team mode is off: start superfluid with --team")

// Team reports whether the server runs in team mode.
func (c *Controller) Team() bool { return c.d.Team != nil }

// ctx is a change made from the desktop: by this machine's admin (no key in it), audited
// via "desktop".
func (c *Controller) teamCtx() context.Context {
	return people.WithVia(context.Background(), Via)
}

func (c *Controller) team() (*Team, error) {
	if c.d.Team == nil {
		return nil, errNoTeam
	}
	return c.d.Team, nil
}

// Lanes lists the lanes with their states.
func (c *Controller) Lanes() ([]tray.TeamLane, error) {
	t, err := c.team()
	if err != nil {
		return nil, err
	}
	all, err := t.Lanes.List(context.Background())
	if err != nil {
		return nil, err
	}
	out := make([]tray.TeamLane, 0, len(all))
	for _, s := range all {
		out = append(out, trayLane(s))
	}
	return out, nil
}

// trayLane is s as the Lanes view shows it: the manager's unavailable is loading or, once a
// start failed, failed; a serving lane with nothing running is idle.
func trayLane(s lanes.Status) tray.TeamLane {
	l := tray.TeamLane{ID: s.ID, Name: s.Name, Device: s.Device, Engine: s.Engine, Model: s.Model,
		Upstream: s.Config.URL + s.Config.Command, HasKey: s.HasKey, Inflight: s.Inflight, Err: s.Error}
	switch {
	case s.State == lanes.Switching:
		l.State = tray.LaneSwitching
	case s.State == lanes.Serving && s.Inflight > 0:
		l.State = tray.LaneServing
	case s.State == lanes.Serving:
		l.State = tray.LaneIdle
	case s.Error != "":
		l.State = tray.LaneFailed
	default:
		l.State = tray.LaneLoading
	}
	return l
}

// LaneDevices names the machine's devices, then "remote" (an openai lane's server elsewhere).
func (c *Controller) LaneDevices() []string {
	if c.d.Team == nil {
		return nil
	}
	var out []string
	for _, d := range c.d.Team.Devices {
		out = append(out, d.Name)
	}
	return append(out, lanes.Remote)
}

// AddLane adds a lane through the lanes manager (its engine starts in the background; the
// manager audits it).
func (c *Controller) AddLane(n tray.NewTeamLane) error {
	t, err := c.team()
	if err != nil {
		return err
	}
	ctx := c.teamCtx()
	_, err = t.Lanes.Add(ctx, lanes.NewLane{Name: n.Name, Device: strings.TrimSpace(n.Device), Engine: lanes.Kind(n.Engine),
		Model: strings.TrimSpace(n.Model), UpstreamKey: strings.TrimSpace(n.UpstreamKey),
		Config: store.LaneConfig{URL: strings.TrimSpace(n.URL), Command: strings.TrimSpace(n.Command)}})
	return err
}

// SwitchLane begins a lane's switch to model (running requests drain first; the manager audits
// it).
func (c *Controller) SwitchLane(lane, model string) error {
	t, err := c.team()
	if err != nil {
		return err
	}
	ctx := c.teamCtx()
	_, err = t.Lanes.Switch(ctx, lane, strings.TrimSpace(model))
	return err
}

// RemoveLane drains a lane and removes it. A lane with a booking not ended yet is refused:
// removing it would leave someone's booking holding nothing, so the booking is cancelled (in
// Bookings) first.
func (c *Controller) RemoveLane(lane string) error {
	t, err := c.team()
	if err != nil {
		return err
	}
	ctx := c.teamCtx()
	all, err := t.Lanes.List(ctx)
	if err != nil {
		return err
	}
	var target *lanes.Status
	for i := range all {
		if all[i].Name == lane || all[i].ID == lane {
			target = &all[i]
		}
	}
	if target == nil {
		return fmt.Errorf("%w: %s", lanes.ErrLaneNotFound, lane)
	}
	if t.Bookings != nil {
		held, err := t.Bookings.List(ctx, bookings.ListQuery{All: true, Current: true, States: []string{bookings.Pending, bookings.Approved}})
		if err != nil {
			return err
		}
		var in []string
		now := time.Now()
		for _, b := range held {
			if b.Lane != target.ID {
				continue
			}
			when := "from " + b.Start.Local().Format("Jan 2 15:04")
			if b.State == bookings.Approved && b.Covers(now) {
				when = "running"
			}
			in = append(in, fmt.Sprintf("%s's %s booking until %s (%s)", b.PersonName, b.State, b.End.Local().Format("Jan 2 15:04"), when))
		}
		if len(in) > 0 {
			return fmt.Errorf("lane %s is booked: %s; cancel the booking in Bookings first", target.Name, strings.Join(in, ", "))
		}
	}
	rctx, cancel := context.WithTimeout(ctx, removeWait)
	defer cancel()
	return t.Lanes.Remove(rctx, target.ID) // past the wait it is removed once its requests finish
}

// Bookings lists everyone's bookings not ended yet, by start, lanes by name.
func (c *Controller) Bookings() ([]tray.Booking, error) {
	t, err := c.team()
	if err != nil {
		return nil, err
	}
	ctx := c.teamCtx()
	list, err := t.Bookings.List(ctx, bookings.ListQuery{All: true, Current: true})
	if err != nil {
		return nil, err
	}
	names := c.laneNames(ctx)
	out := make([]tray.Booking, 0, len(list))
	for _, b := range list {
		out = append(out, trayBooking(b, names))
	}
	return out, nil
}

// laneNames are the lanes' names by id (a booking keeps the lane's id).
func (c *Controller) laneNames(ctx context.Context) map[string]string {
	names := map[string]string{}
	all, err := c.d.Team.Lanes.List(ctx)
	if err != nil {
		return names
	}
	for _, l := range all {
		names[l.ID] = l.Name
	}
	return names
}

func trayBooking(b bookings.Booking, names map[string]string) tray.Booking {
	lane := b.Lane
	if n := names[b.Lane]; n != "" {
		lane = n
	}
	return tray.Booking{ID: b.ID, Person: b.PersonName, Lane: lane, Device: b.Device, Model: b.Model,
		Start: b.Start, End: b.End, State: b.State, DecidedBy: b.DecidedBy}
}

// Book books nb for this machine's admin through the bookings service (the overlap, the window
// and the policy are checked there, and the booking audited).
func (c *Controller) Book(nb tray.NewBooking) (tray.Booking, error) {
	t, err := c.team()
	if err != nil {
		return tray.Booking{}, err
	}
	now := time.Now()
	start, err := bookingStart(nb.Start, now)
	if err != nil {
		return tray.Booking{}, err
	}
	length, err := time.ParseDuration(strings.TrimSpace(nb.Length))
	if err != nil || length <= 0 {
		return tray.Booking{}, fmt.Errorf("the length %q is not a duration such as 30m, 2h or 1h30m", nb.Length)
	}
	ctx := c.teamCtx()
	b, err := t.Bookings.Book(ctx, bookings.NewBooking{Lane: strings.TrimSpace(nb.Lane), Device: strings.TrimSpace(nb.Device),
		Model: strings.TrimSpace(nb.Model), Start: start, End: start.Add(length)})
	names := c.laneNames(ctx)
	if err != nil {
		return tray.Booking{}, namedLanes(bookingError(err), names)
	}
	return trayBooking(b, names), nil
}

// namedLanes is err with the lanes' ids in its message replaced by their names (a taken
// window's message names the lane by the id the booking keeps).
func namedLanes(err error, names map[string]string) error {
	msg := err.Error()
	for id, name := range names {
		msg = strings.ReplaceAll(msg, id, name)
	}
	if msg == err.Error() {
		return err
	}
	return errors.New(msg)
}

// bookingStart reads a start as the command line takes it ("now", "+2h", RFC 3339), or as a
// person types a local time: "2006-01-02 15:04".
func bookingStart(s string, now time.Time) (time.Time, error) {
	if t, err := time.ParseInLocation("2006-01-02 15:04", strings.TrimSpace(s), time.Local); err == nil {
		return t, nil
	}
	t, err := bookings.ParseTime(s, now)
	if err != nil {
		return time.Time{}, fmt.Errorf("the start: %s, or a local time such as %s", trimInvalid(err), now.Add(time.Hour).Local().Format("2006-01-02 15:04"))
	}
	return t, nil
}

func (c *Controller) ApproveBooking(id string) error {
	return c.decide(id, (*bookings.Service).Approve)
}
func (c *Controller) RejectBooking(id string) error { return c.decide(id, (*bookings.Service).Reject) }
func (c *Controller) CancelBooking(id string) error { return c.decide(id, (*bookings.Service).Cancel) }

func (c *Controller) decide(id string, fn func(*bookings.Service, context.Context, string) (bookings.Booking, error)) error {
	t, err := c.team()
	if err != nil {
		return err
	}
	_, err = fn(t.Bookings, c.teamCtx(), id)
	return bookingError(err)
}

// bookingError words a refusal for the window as the API's message does (a 409
// booking_conflict says which booking holds the window), without the "invalid input:" of a bad
// window (400).
func bookingError(err error) error {
	if errors.Is(err, llm.ErrInvalidInput) {
		return errors.New(trimInvalid(err))
	}
	return err
}

func trimInvalid(err error) string {
	return strings.TrimPrefix(err.Error(), llm.ErrInvalidInput.Error()+": ")
}
