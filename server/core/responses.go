package core

import (
	"context"

	"github.com/superfluid/superfluid/server/store"
)

// Stored Responses API state. The dialect owns the items' JSON; the core only keeps it.
// Without a store nothing is kept: saves do nothing and every lookup is not found.

// StoredResponse is a kept Responses API response (the dialects see the core's name for it).
type StoredResponse = store.Response

// MissingResponseError names the response of a chain that is gone; it matches ErrNotFound.
type MissingResponseError = store.MissingResponseError

// ErrNotFound is wrapped by every lookup of something that is not kept.
var ErrNotFound = store.ErrNotFound

// SaveResponse keeps a response for GET, input_items and previous_response_id.
func (s *Service) SaveResponse(ctx context.Context, r StoredResponse) error {
	if s.store == nil {
		return nil
	}
	r.Owner = OwnerOf(ctx)
	return s.store.SaveResponse(ctx, r)
}

// Response returns a kept response, or an error wrapping ErrNotFound.
func (s *Service) Response(ctx context.Context, id string) (StoredResponse, error) {
	if s.store == nil {
		return StoredResponse{}, &MissingResponseError{ID: id}
	}
	r, err := s.store.Response(ctx, id)
	if err == nil && !Visible(ctx, r.Owner) {
		return StoredResponse{}, &MissingResponseError{ID: id} // another key's: as if missing
	}
	return r, err
}

// ResponseChain returns the conversation ending with response id, oldest first, or an error
// wrapping ErrNotFound (a *MissingResponseError) when any response of it is gone.
func (s *Service) ResponseChain(ctx context.Context, id string) ([]StoredResponse, error) {
	if s.store == nil {
		return nil, &MissingResponseError{ID: id}
	}
	chain, err := s.store.ResponseChain(ctx, id)
	for i := len(chain) - 1; err == nil && i >= 0; i-- {
		if !Visible(ctx, chain[i].Owner) {
			return nil, &MissingResponseError{ID: chain[i].ID} // another key's: as if missing
		}
	}
	return chain, err
}

// DeleteResponse removes a kept response, or returns an error wrapping ErrNotFound.
func (s *Service) DeleteResponse(ctx context.Context, id string) error {
	if s.store == nil {
		return &MissingResponseError{ID: id}
	}
	if _, err := s.Response(ctx, id); err != nil {
		return err
	}
	return s.store.DeleteResponse(ctx, id)
}
