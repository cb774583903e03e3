package core

import (
	"context"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/store"
)

// Owners: when requests carry API keys, files, batches and stored responses belong to the key
// that made them, and another key is told they do not exist, with the same 404 as an unknown
// id. Rows made while no key was configured have no owner: admin keys see them. Without keys
// every request sees every row.

// ownerOf is the owner a row made by the request ctx belongs to gets: its key's id, "" without
// keys.
func ownerOf(ctx context.Context) string {
	if id, ok := auth.FromContext(ctx); ok {
		return id.ID
	}
	return ""
}

// visible reports whether the request ctx belongs to may see a row owned by owner.
func visible(ctx context.Context, owner string) bool {
	id, ok := auth.FromContext(ctx)
	return !ok || owner == id.ID || (owner == "" && id.Admin)
}

// visibleOwners are the owners whose rows the request ctx belongs to may list; nil for all.
func visibleOwners(ctx context.Context) []string {
	id, ok := auth.FromContext(ctx)
	switch {
	case !ok:
		return nil
	case id.Admin:
		return []string{id.ID, ""}
	default:
		return []string{id.ID}
	}
}

// asOwner is the context a batch runs in: its owner's identity, so its lines are recorded in
// the key's name and reach only the models the key may use. A key that is gone (revoked, or no
// longer in the policy) still has its acknowledged batch run, in its name (Config.Owner).
func (s *Service) asOwner(ctx context.Context, b store.Batch) context.Context {
	if b.Owner == "" {
		return ctx
	}
	if s.cfg.Owner != nil {
		if id, ok := s.cfg.Owner(ctx, b.Owner); ok {
			return auth.NewContext(ctx, id)
		}
	}
	return auth.NewContext(ctx, &auth.Identity{ID: b.Owner, Name: b.OwnerName})
}
