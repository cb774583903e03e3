package core

import (
	"context"
	"errors"
	"fmt"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/auth"
)

// ModelFor resolves a client's model name for the request ctx belongs to. A key limited to
// some models (auth.Identity.Models) is told about any other model, and about a model that does
// not exist, in the same words and with the same 404 (model_not_found), as OpenAI answers a
// project key without access: the answer does not say which models exist. Without keys it is
// Model.
func (s *Service) ModelFor(ctx context.Context, name string) (*Model, error) {
	m, err := s.Model(name)
	id, _ := auth.FromContext(ctx)
	if id == nil || len(id.Models) == 0 {
		return m, err
	}
	if err == nil && (id.AllowsModel(m.ID) || id.AllowsModel(name)) {
		return m, nil
	}
	if err != nil && !errors.Is(err, llm.ErrModelNotFound) {
		return nil, err
	}
	return nil, fmt.Errorf("%w: the model %q does not exist or this API key may not use it; GET /v1/models lists the models it may use",
		llm.ErrModelNotFound, name)
}

// VisibleModels lists the models the request's key may use (all of them without keys).
func (s *Service) VisibleModels(ctx context.Context) []*Model {
	all := s.Models()
	id, _ := auth.FromContext(ctx)
	if id == nil || len(id.Models) == 0 {
		return all
	}
	out := make([]*Model, 0, len(id.Models))
	for _, m := range all {
		if id.AllowsModel(m.ID) {
			out = append(out, m)
		}
	}
	return out
}
