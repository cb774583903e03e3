package app

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/superfluid/superfluid/runtime/backends"
	"github.com/superfluid/superfluid/server/bookings"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/people"
)

// laneEngines build the lane engines of the kinds app does not build itself (local is
// team.go's): the forwarding engine (openai) and the supervised server process (command)
// register theirs here, from their own files, in an init function.
var laneEngines = map[lanes.Kind]func(a *App) lanes.EngineFactory{}

// team is team mode's serving floor: the machine's devices and the lanes on them, whose
// router resolves every model name the core is asked for.
type team struct {
	devices  []lanes.Device
	lanes    *lanes.Manager
	bookings *bookings.Service
	// clock is the bookings the lanes follow once started (nil without bookings);
	// stopFollowing ends that (team_follow.go).
	clock         lanes.BookingClock
	stopFollowing func()
	people        *people.Service

	mu    sync.Mutex
	holds map[string]int // catalog model id → the local lanes serving it
}

// buildTeam, in team mode, builds the lanes over the core and makes their router the core's.
func (a *App) buildTeam() {
	if !a.cfg.Team {
		return
	}
	t := &team{devices: lanes.Devices(backends.Detect())}
	factories := map[lanes.Kind]lanes.EngineFactory{lanes.Local: t.localLane(a)}
	for kind, newFactory := range laneEngines {
		factories[kind] = newFactory(a)
	}
	t.lanes = lanes.NewManager(lanes.Config{Store: a.store, Devices: t.devices, Catalog: a.svc, Audit: auditLanes(a.people, false),
		Factory: func(ctx context.Context, spec lanes.Spec) (*core.Model, func(), error) {
			build := factories[lanes.Kind(spec.Lane.Engine)]
			if build == nil {
				return nil, nil, fmt.Errorf("this build has no %s engine", spec.Lane.Engine)
			}
			return build(ctx, spec)
		}})
	var booked lanes.Reservations // bookings reach the router as lanes.Reservations (team_bookings.go)
	if svc, err := newBookings(a.store, bookings.Policy{NeedsApproval: a.cfg.BookingApproval,
		MaxLength: a.cfg.BookingMaxLength, MaxHoursPerWeek: a.cfg.BookingHoursPerWeek}, auditBookings(a.people, false), a.svc); err != nil {
		slog.Error("team mode without bookings", "err", err)
	} else {
		bl := &bookedLanes{svc: svc, st: a.store}
		t.bookings, booked, t.clock = svc, bl, bl
		endBookingsOnDisable(a.people, svc)
	}
	a.svc.SetRouter(lanes.NewRouter(t.lanes, booked, a.svc))
	a.team, t.people = t, a.people
}

// localLane serves a catalog model on the built-in worker: the lane is unavailable while it
// loads, and the model is unloaded when the last lane serving it lets it go (two lanes may
// serve one catalog model, which is one engine: unloading it for one would cut the other's
// running requests short).
func (t *team) localLane(a *App) lanes.EngineFactory {
	return func(ctx context.Context, spec lanes.Spec) (*core.Model, func(), error) {
		m, err := a.svc.LoadModel(ctx, spec.Lane.Model)
		if err != nil {
			return nil, nil, err
		}
		t.mu.Lock()
		if t.holds == nil {
			t.holds = map[string]int{}
		}
		t.holds[m.ID]++
		t.mu.Unlock()
		var once sync.Once
		return m, func() {
			once.Do(func() {
				t.mu.Lock()
				t.holds[m.ID]--
				last := t.holds[m.ID] == 0
				if last {
					delete(t.holds, m.ID)
				}
				t.mu.Unlock()
				if !last {
					return
				}
				if _, err := a.svc.UnloadModel(context.Background(), m.ID); err != nil {
					slog.Warn("unloading a lane's model", "model", m.ID, "err", err)
				}
			})
		}, nil
	}
}

// lanesManager and laneDevices are what the router serves at /v1/admin/lanes (nil outside
// team mode).
func (t *team) lanesManager() *lanes.Manager {
	if t == nil {
		return nil
	}
	return t.lanes
}

func (t *team) bookingService() *bookings.Service {
	if t == nil {
		return nil
	}
	return t.bookings
}

func (t *team) laneDevices() []lanes.Device {
	if t == nil {
		return nil
	}
	return t.devices
}

// start starts the stored lanes' engines.
func (t *team) start() error {
	if t == nil {
		return nil
	}
	if err := t.lanes.Start(context.Background()); err != nil {
		return fmt.Errorf("start the lanes: %w", err)
	}
	if t.clock != nil {
		t.followBookings(t.clock, t.people)
	}
	return nil
}

// close drains the lanes and releases their engines, until ctx ends.
func (t *team) close(ctx context.Context) {
	if t == nil {
		return
	}
	if t.stopFollowing != nil {
		t.stopFollowing()
	}
	if err := t.lanes.Close(ctx); err != nil {
		slog.Warn("the lanes did not drain in time", "err", err)
	}
}
