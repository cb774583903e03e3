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
