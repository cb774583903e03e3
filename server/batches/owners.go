package core

import (
	"context"
	"errors"
	"fmt"

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

// ErrOwnerNotFound is Config.Owner's answer for a key that was revoked or no longer exists.
var ErrOwnerNotFound = errors.New("the API key was revoked or no longer exists")

// asOwner is the context a batch runs in: its owner's identity, so its lines are recorded in
// the key's name and reach only the models the key may use. A batch whose key cannot be
// resolved (revoked, gone from the policy, or no way to look keys up) gets an error wrapping
// ErrOwnerNotFound: it must not run with no restrictions at all.
func (s *Service) asOwner(ctx context.Context, b store.Batch) (context.Context, error) {
	if b.Owner == "" {
		return ctx, nil // made while no key was configured
	}
	if s.cfg.Owner == nil {
		return nil, fmt.Errorf("%w: this server cannot look up the key %s that created the batch", ErrOwnerNotFound, b.OwnerName)
	}
	id, err := s.cfg.Owner(ctx, b.Owner)
	if err != nil {
		return nil, fmt.Errorf("look up the key that created batch %s: %w", b.ID, err)
	}
	return auth.NewContext(ctx, id), nil
}

// ownerGone is the reason a batch whose key was revoked fails with.
func ownerGone(b store.Batch) store.BatchError {
	return store.BatchError{Code: "invalid_api_key",
		Message: fmt.Sprintf("the API key %q that created this batch was revoked or no longer exists, so its lines were not run; create the batch again with a valid key", b.OwnerName)}
}
