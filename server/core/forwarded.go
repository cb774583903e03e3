package core

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/store"
)

// Forwarded is a request the router relayed as is to a lane's server (team mode: a route no
// dialect serves, or one a dialect serves only for local models), as its record needs it.
type Forwarded struct {
	// Endpoint is the path ("/v1/rerank").
	Endpoint string
	// Name is the model field as the client sent it; Model the model it was routed to (nil
	// when routing refused it).
	Name  string
	Model *Model
	// Stream reports whether the client asked for a stream.
	Stream bool
	// Status is the status sent: the upstream's, relayed, or the refusal's.
	Status int
	// Err is why the request failed before or while relaying; nil otherwise.
	Err error
	// Usage is the upstream's JSON usage object, when its reply had one.
	Usage llm.Usage
	// Start is when the request came.
	Start time.Time
}

// RecordForwarded queues f's request record (the person, key, lane and engine from ctx and
// f.Model, as every routed request's) and charges its tokens to the key's meter.
func (s *Service) RecordForwarded(ctx context.Context, f Forwarded) {
	if m, _ := ctx.Value(meterKey{}).(*TokenMeter); m != nil {
		m.cached.Add(int64(f.Usage.CachedTokens)) // as meterTokens: a quota's cached fraction
		m.n.Add(int64(f.Usage.PromptTokens + f.Usage.CompletionTokens))
	}
	if s.store == nil {
		return
	}
	rec := store.RequestRecord{ID: forwardedID(), Model: f.Name, Endpoint: f.Endpoint, Stream: f.Stream, Status: f.Status,
		PromptTokens: f.Usage.PromptTokens, CompletionTokens: f.Usage.CompletionTokens, CachedTokens: f.Usage.CachedTokens,
		Total: time.Since(f.Start), CreatedAt: f.Start,
		ClientDisconnected: errors.Is(f.Err, context.Canceled) || ctx.Err() != nil}
	if f.Model != nil {
		rec.Model = f.Model.ID
	}
	if rec.Status == 0 {
		rec.Status = statusOf(f.Err)
	}
	if f.Err != nil {
		rec.Error = f.Err.Error()
	}
	rec.KeyID, rec.KeyName = keyOf(ctx)
	rec.PersonID, rec.PersonName = personOf(ctx)
	rec.LaneName, rec.Engine = LaneOf(f.Model)
	s.store.Record(rec)
}

// forwardedID names a forwarded request's record ("fwd-" and 12 random bytes in hex).
func forwardedID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "fwd-" + hex.EncodeToString(b)
}
