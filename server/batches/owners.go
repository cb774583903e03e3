package batches

import (
	"context"
	"errors"
	"fmt"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/store"
)

// Owners: files and batches belong to the key that made them (see core.Visible for who may
// see a row); a batch's lines run as that key.

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
