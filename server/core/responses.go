package core

import (
	"context"

	"github.com/superfluid/superfluid/server/store"
)

// Stored Responses API state. The dialect owns the items' JSON; the core only keeps it.
// Without a store nothing is kept: saves do nothing and every lookup is not found.

// SaveResponse keeps a response for GET, input_items and previous_response_id.
func (s *Service) SaveResponse(ctx context.Context, r store.Response) error {
	if s.store == nil {
		return nil
	}
	return s.store.SaveResponse(ctx, r)
}

// Response returns a kept response, or an error wrapping store.ErrNotFound.
func (s *Service) Response(ctx context.Context, id string) (store.Response, error) {
	if s.store == nil {
		return store.Response{}, &store.MissingResponseError{ID: id}
	}
	return s.store.Response(ctx, id)
}

// ResponseChain returns the conversation ending with response id, oldest first, or an error
// wrapping store.ErrNotFound (a *store.MissingResponseError) when any response of it is gone.
func (s *Service) ResponseChain(ctx context.Context, id string) ([]store.Response, error) {
	if s.store == nil {
		return nil, &store.MissingResponseError{ID: id}
	}
	return s.store.ResponseChain(ctx, id)
}

// DeleteResponse removes a kept response, or returns an error wrapping store.ErrNotFound.
func (s *Service) DeleteResponse(ctx context.Context, id string) error {
	if s.store == nil {
		return &store.MissingResponseError{ID: id}
	}
	return s.store.DeleteResponse(ctx, id)
}
