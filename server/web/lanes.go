package web

import (
	"net/http"

	"github.com/superfluid/superfluid/server/lanes"
)

// Lane is a lane as everyone signed in sees it: what it serves and who holds it now. The
// engine's URL and command are the admins' (GET /api/admin/lanes).
type Lane struct {
	Object      string `json:"object" enum:"lane"`
	ID          string `json:"id"`
	Name        string `json:"name"`
	Device      string `json:"device"`
	Engine      string `json:"engine" enum:"local,openai,command"`
	Model       string `json:"model"`
	ServedModel string `json:"served_model,omitempty"`
	State       string `json:"state"`
	Inflight    int    `json:"inflight"`
	Error       string `json:"error,omitempty"`
	CreatedAt   int64  `json:"created_at"`
	UpdatedAt   int64  `json:"updated_at"`
	// Booking is the booking running on the lane now (its own or its whole device's); null when none.
	Booking *LaneBooking `json:"booking"`
}

// LaneBooking is who holds a lane now, and until when (Unix seconds).
type LaneBooking struct {
	ID     string `json:"id"`
	Person string `json:"person"`
	Model  string `json:"model,omitempty"`
	Until  int64  `json:"until"`
}

// LaneOf is s on the wire (without its booking).
func LaneOf(s lanes.Status) Lane {
	return Lane{Object: "lane", ID: s.ID, Name: s.Name, Device: s.Device, Engine: s.Engine, Model: s.Model,
		ServedModel: s.Config.ServedModel, State: string(s.State), Inflight: s.Inflight, Error: s.Error,
		CreatedAt: s.CreatedAt.Unix(), UpdatedAt: s.UpdatedAt.Unix()}
}

// LaneList is the answer of GET /api/lanes: the lanes and the machine's devices.
type LaneList struct {
	Object  string         `json:"object" enum:"list"`
	Data    []Lane         `json:"data"`
	Devices []lanes.Device `json:"devices"`
}

func (a *API) laneRoutes() {
	Handle(a, http.MethodGet, "/api/lanes", Meta{Summary: "The lanes, what they serve and who holds them", Tag: "lanes", Access: SignedIn}, a.lanes)
}

func (a *API) lanes(r *Request[NoBody]) (LaneList, error) {
	out := LaneList{Object: "list", Data: []Lane{}, Devices: nonNil(a.cfg.Devices)}
	if a.cfg.Lanes == nil {
		return out, nil
	}
	all, err := a.cfg.Lanes.List(r.Ctx)
	if err != nil {
		return out, err
	}
	var running []laneHold
	if a.cfg.Bookings != nil {
		active, err := a.cfg.Bookings.Active(r.Ctx, a.cfg.Now())
		if err != nil {
			return out, err
		}
		for _, b := range active {
			running = append(running, laneHold{Lane: b.Lane, Device: b.Device,
				Booking: LaneBooking{ID: b.ID, Person: b.PersonName, Model: b.Model, Until: b.End.Unix()}})
		}
	}
	for _, s := range all {
		l := LaneOf(s)
		for _, b := range running {
			if b.Lane == s.ID || (b.Lane == "" && b.Device == s.Device) {
				held := b.Booking
				l.Booking = &held
				break
			}
		}
		out.Data = append(out.Data, l)
	}
	return out, nil
}

// laneHold is a running booking and what it holds: a lane (by id) or a whole device.
type laneHold struct {
	Lane, Device string
	Booking      LaneBooking
}
