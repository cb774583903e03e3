package core

import (
	"context"
	"errors"
	"time"

	"github.com/superfluid/superfluid/server/store"
)

// serve is the envelope every request to a model runs in (chat, completion, infill,
// embedding, rerank): counted until its record is queued (Wait), timed from its arrival,
// its model resolved in the caller's scope (ModelFor), and recorded, failed or not. A failed
// run's partial result is for the record only: the caller gets nil with the error.
func (s *Service) serve(ctx context.Context, key recordKey, run func(context.Context, *Model) (*Result, error)) (*Result, error) {
	s.running.Add(1)
	defer s.running.Done()
	start := time.Now()
	ctx = withStart(ctx, start)
	m, err := s.ModelFor(ctx, key.model)
	var res *Result
	if err == nil {
		res, err = run(ctx, m)
	}
	s.record(ctx, key, m, res, err, start)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// recordKey is what every request record starts from.
type recordKey struct {
	id, endpoint, model string
	stream              bool
}

// record queues the request's record; m is the model it was routed to (nil when none was).
func (s *Service) record(ctx context.Context, key recordKey, m *Model, res *Result, err error, start time.Time) {
	s.observeTokens(res)
	meterTokens(ctx, res)
	if s.store == nil {
		return
	}
	rec := store.RequestRecord{
		ID: key.id, Model: key.model, Endpoint: key.endpoint, Stream: key.stream,
		Status: statusOf(err), Total: time.Since(start), CreatedAt: start,
		ClientDisconnected: errors.Is(err, context.Canceled) || ctx.Err() != nil,
	}
	rec.KeyID, rec.KeyName = keyOf(ctx)
	rec.PersonID, rec.PersonName = personOf(ctx)
	rec.LaneName, rec.Engine = LaneOf(m)
	if err != nil {
		rec.Error = err.Error()
	}
	if res != nil {
		rec.Model = res.Model.ID
		u := res.Usage()
		rec.PromptTokens, rec.CompletionTokens, rec.CachedTokens = u.PromptTokens, u.CompletionTokens, u.CachedTokens
		if len(res.Choices) > 0 {
			d := res.Choices[0]
			rec.FinishReason, rec.Lane, rec.Warning = d.FinishReason, d.Lane, d.Warning
			rec.Queue, rec.Prefill, rec.Decode = d.Timings.Queue, d.Timings.Prefill, d.Timings.Decode
			rec.RestoredTokens, rec.CacheMiss = d.RestoredTokens, d.CacheMiss
		}
		if spec := SpecReportOf(res.Choices...); spec != nil {
			rec.SpecProposed, rec.SpecAccepted = spec.Proposed, spec.Accepted
		}
		rec.Adapters = adaptersRecord(res.Adapters)
	}
	// Queued, not written: the reply never waits for the disk. A full queue drops the record
	// (the store counts and logs it) rather than hold the reply.
	s.store.Record(rec)
}
