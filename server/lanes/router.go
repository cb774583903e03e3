package lanes

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core"
)

// Reservation is a booking running now, as the router needs it: a lane (by name) or, when
// Whole, every lane on a device.
type Reservation struct {
	Lane, Device string
	// PersonID is who booked: the person's id, or the key's id for a key of nobody (as
	// bookings.PersonFrom names them). Ids, not names: a key of nobody may be named like a
	// person, and the command line books as "local".
	PersonID string
	Whole    bool
	// Model is the model the booking asked the lane to load ("" for the lane's own).
	Model      string
	Start, End time.Time
}

// Reservations are the bookings (the bookings package implements it).
type Reservations interface {
	// Active are the approved bookings running at now.
	Active(now time.Time) []Reservation
}

// Router routes the model field to lanes as the spec's "The model field" says
// (core.Router).
type Router struct {
	lanes   *Manager
	booked  Reservations
	catalog Catalog
	// Now is the clock; time.Now unless a test sets it.
	Now func() time.Time
}

// NewRouter routes over the manager's lanes; booked and catalog may be nil (no bookings;
// registered models are those the lanes name).
func NewRouter(m *Manager, booked Reservations, catalog Catalog) *Router {
	return &Router{lanes: m, booked: booked, catalog: catalog, Now: time.Now}
}

var _ core.Router = (*Router)(nil)

// personOf is who sent the request ("" without a key), as bookings name people
// (Reservation.PersonID): the key's person's id, or the key's own id for a key of nobody.
func personOf(ctx context.Context) string {
	if id, ok := auth.FromContext(ctx); ok {
		if id.Person != nil { // a person's keys are all the person's (bookings.PersonFrom)
			return id.Person.ID
		}
		return id.ID
	}
	return ""
}

// access is what one person may do with one lane right now.
type access struct {
	lane   *Lane
	mine   bool  // the person booked it
	refuse error // gpu_reserved or gpu_exclusive; nil when the person may use it
	own    bool  // refuse is the person's own whole-GPU booking
}

// accessOf is each lane as the request's caller may use it at now, in the manager's order:
// the lanes of models their key may use (auth.Identity.Models; all for most keys).
func (r *Router) accessOf(ctx context.Context, now time.Time) []access {
	who := personOf(ctx)
	key, _ := auth.FromContext(ctx)
	var active []Reservation
	if r.booked != nil {
		active = r.booked.Active(now)
	}
	lanes := r.lanes.Lanes()
	out := make([]access, 0, len(lanes))
	for _, l := range lanes {
		if !key.AllowsModel(l.Status().Model) {
			continue
		}
		a := access{lane: l}
		device := l.row.Device
		for _, b := range active {
			switch {
			case b.Whole && b.Device == device && b.PersonID == who:
				a.refuse, a.own = exclusive(device, b.End), true
			case b.Whole && b.Device == device && a.refuse == nil:
				a.refuse = reserved("the GPU "+device, b.End)
			case !b.Whole && b.Lane == l.row.Name && b.PersonID == who:
				a.mine = true
			case !b.Whole && b.Lane == l.row.Name && a.refuse == nil:
				a.refuse = reserved("lane "+l.row.Name, b.End)
			}
		}
		if a.own {
			a.mine = false
		}
		out = append(out, a)
	}
	return out
}

// Route picks the lane for name: a lane the caller may use serving it (their booked lane
// first); for an empty or unknown name their booked lane, else a free one.
func (r *Router) Route(ctx context.Context, name string) (*core.Model, error) {
	lanes := r.accessOf(ctx, r.Now())
	if id, ok := r.registered(name); ok {
		if key, _ := auth.FromContext(ctx); !key.AllowsModel(name) && !key.AllowsModel(id) {
			// As without lanes (core.ModelFor): a key limited to other models hears nothing of
			// this one.
			return nil, fmt.Errorf("%w: the model %q does not exist or this API key may not use it; GET /v1/models lists the models it may use",
				llm.ErrModelNotFound, name)
		}
		var serving []access
		for _, a := range lanes {
			if a.lane.serves(name) || id != "" && a.lane.serves(id) {
				serving = append(serving, a)
			}
		}
		if len(serving) == 0 {
			return nil, &llm.StatusError{Status: http.StatusConflict, Code: "model_not_loaded",
				Message: fmt.Sprintf("no lane is serving %s; book a slot to load it", name)}
		}
		return pick(serving)
	}
	if len(lanes) == 0 {
		return nil, &llm.StatusError{Status: http.StatusConflict, Code: "model_not_loaded", Message: "no lane is serving a model"}
	}
	return pick(lanes)
}

// pick is the caller's booked lane among lanes, else a free one (a serving one first), else
// the refusal: the caller's own whole-GPU booking before someone else's.
func pick(lanes []access) (*core.Model, error) {
	var free *Lane
	for _, a := range lanes {
		if a.refuse != nil {
			continue
		}
		if a.mine {
			return a.lane.model()
		}
		if free == nil || (free.Status().State != Serving && a.lane.Status().State == Serving) {
			free = a.lane
		}
	}
	if free != nil {
		return free.model()
	}
	for _, a := range lanes {
		if a.own {
			return nil, a.refuse
		}
	}
	return nil, lanes[0].refuse
}

// registered reports whether name is a model superfluid knows: one a lane names, or the
// catalog's. id is the catalog's id for name ("" when the catalog does not know it): a local
// lane names its model by id, and a client may use another name of it (a bare repository, a
// tag).
func (r *Router) registered(name string) (id string, ok bool) {
	if name == "" {
		return "", false
	}
	if r.catalog != nil {
		if m, err := r.catalog.Model(name); err == nil {
			return m.ID, true
		}
	}
	for _, l := range r.lanes.Lanes() {
		if l.serves(name) {
			return "", true
		}
	}
	return "", false
}

// Visible lists the models on the lanes the caller may use now, loaded or loading.
func (r *Router) Visible(ctx context.Context) []*core.Model {
	var out []*core.Model
	seen := map[string]bool{}
	for _, a := range r.accessOf(ctx, r.Now()) {
		if a.refuse != nil {
			continue
		}
		if m := a.lane.Model(); !seen[m.ID] {
			seen[m.ID] = true
			out = append(out, m)
		}
	}
	return out
}

func reserved(what string, until time.Time) error {
	return &llm.StatusError{Status: http.StatusForbidden, Code: "gpu_reserved",
		Message: fmt.Sprintf("%s is booked by someone else until %s", what, until.UTC().Format(time.RFC3339))}
}

func exclusive(device string, until time.Time) error {
	return &llm.StatusError{Status: http.StatusServiceUnavailable, Code: "gpu_exclusive",
		Message: fmt.Sprintf("your whole-GPU booking of %s is running until %s, so no model is served on it", device, until.UTC().Format(time.RFC3339))}
}
