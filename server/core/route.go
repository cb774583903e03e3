package core

import "context"

// Router picks the model a request is served by when names do not map to models one to one:
// team mode routes the model field to lanes (package lanes), by who is asking, what each lane
// serves and who booked what. Without one (single-user mode) names resolve in the library.
type Router interface {
	// Route is the model serving name for the request ctx belongs to, or the refusal the
	// caller gets (an llm.StatusError such as 403 gpu_reserved or 409 model_not_loaded).
	Route(ctx context.Context, name string) (*Model, error)
	// Visible lists the models the request's caller may use right now.
	Visible(ctx context.Context) []*Model
}

// SetRouter makes r resolve every model name (ModelFor) and listing (VisibleModels). It is set
// once, before the service serves requests.
func (s *Service) SetRouter(r Router) { s.router = r }

// LaneReporter is implemented by the engine of a model a lane serves (team mode): the lane's
// name and its engine kind (local, openai, command), which the request records carry.
type LaneReporter interface {
	ServingLane() (lane, engine string)
}

// LaneOf is the lane serving m and its engine kind; "" for a model no lane serves (or nil).
func LaneOf(m *Model) (lane, engine string) {
	if m == nil {
		return "", ""
	}
	if r, ok := m.Engine.(LaneReporter); ok {
		return r.ServingLane()
	}
	return "", ""
}

// ModelOptional reports whether a request may leave its model field empty: in team mode the
// router picks the caller's booked lane, else a free one (the spec's "The model field");
// without a router a request must name its model.
func (s *Service) ModelOptional() bool { return s.router != nil }
