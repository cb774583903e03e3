package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server/auth"
)

// ErrAdminRequired refuses a key that is not an admin key what only an admin key may do; the
// dialects answer it with 403 admin_required.
var ErrAdminRequired = errors.New("admin key required")

// ModelFor resolves a client's model name for the request ctx belongs to. A key limited to
// some models (auth.Identity.Models) is told about any other model, and about a model that does
// not exist, in the same words and with the same 404 (model_not_found), as OpenAI answers a
// project key without access: the answer does not say which models exist. Without keys it is
// Model.
func (s *Service) ModelFor(ctx context.Context, name string) (*Model, error) {
	if s.router != nil {
		return s.router.Route(ctx, name)
	}
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
	// A repository named without its quantization means one the key may use, whichever the
	// catalog's own rule (another key's loaded one, serve's) would pick; its error lists only
	// the key's quantizations.
	if s.mgr != nil {
		e, rerr := s.mgr.Catalog().LookupRepo(name, func(e *models.Entry) bool { return id.AllowsModel(e.ID) })
		if e != nil {
			return s.Model(e.ID)
		}
		if rerr != nil {
			return nil, rerr
		}
	}
	return nil, fmt.Errorf("%w: the model %q does not exist or this API key may not use it; GET /v1/models lists the models it may use",
		llm.ErrModelNotFound, name)
}

// VisibleModels lists the models the request's key may use (all of them without keys).
func (s *Service) VisibleModels(ctx context.Context) []*Model {
	if s.router != nil {
		return s.router.Visible(ctx)
	}
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

// CheckKeepAlive refuses keep_alive 0 to a key that is not an admin key once keys exist: it
// unloads the model, which other keys' requests may be using, so it is model management like
// /v1/models/unload. Such a key may lengthen a model's keep-alive but not shorten it: a shorter
// duration ("1ns" would unload it as 0 does, once idle) is raised to the server's default.
// Without keys every caller may, as before.
func (s *Service) CheckKeepAlive(ctx context.Context, keepAlive *time.Duration) error {
	if keepAlive == nil {
		return nil
	}
	if id, keyed := auth.FromContext(ctx); !keyed || id.Admin {
		return nil
	}
	if *keepAlive == 0 {
		return fmt.Errorf("%w: keep_alive 0 unloads the model, which needs an admin key; leave keep_alive out (or give a duration), or use an admin key (superfluid keys create NAME --admin)",
			ErrAdminRequired)
	}
	if def := s.KeepAlive(); *keepAlive > 0 && (def < 0 || *keepAlive < def) {
		*keepAlive = def
	}
	return nil
}

// IsAdmin reports whether the request ctx belongs to carries an admin key; false without keys
// (the HTTP layer decides for those: see package peer).
func IsAdmin(ctx context.Context) bool {
	id, keyed := auth.FromContext(ctx)
	return keyed && id.Admin
}
