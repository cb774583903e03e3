package core

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
)

// Observer is what the core tells a metrics collector (server/metrics implements it). The core
// calls it from every request and from every piece of generated text, so an implementation
// must be safe for concurrent use, cheap, and never block. Config.Observer nil observes
// nothing (NopObserver).
type Observer interface {
	// Generation starts observing one generation request on model (the model's id), before
	// its first token. Called once per request that reaches a model.
	Generation(model string) GenerationObserver
	// Tokens is called once per generation request when it is recorded, failed or not, with
	// the tokens it used: the prompt counted once, completion tokens of every choice.
	Tokens(model string, u llm.Usage)
	// BatchLine is called once for every batch line that finished: ok reports whether the
	// line succeeded (its output went to the output file) rather than failed (error file).
	BatchLine(ok bool)
}

// GenerationObserver receives one generation request's token latencies. Its methods are
// called concurrently when the request runs several choices.
type GenerationObserver interface {
	// FirstToken is the time from the request's start to its first generated token (any
	// choice). Called at most once.
	FirstToken(d time.Duration)
	// InterToken is called for each piece of text after a choice's first: gap is the time
	// since that choice's previous piece and tokens how many tokens the piece covers (≥ 1),
	// so the latency per token is gap/tokens.
	InterToken(gap time.Duration, tokens int)
}

// SpeedObserver is an Observer that also counts what speculative decoding and the prefix cache
// on disk did (server/metrics implements it). The core calls Speed once per generation request
// that reached a model, when it is recorded, with the sums over its choices.
type SpeedObserver interface {
	Speed(model string, s Speed)
}

// Speed is one request's speculation and disk-cache counts: drafted and kept tokens, and
// prompt tokens restored from the prefix cache on disk (the prompt counted once).
type Speed struct {
	SpecProposed, SpecAccepted, RestoredTokens int
}

// NopObserver observes nothing.
type NopObserver struct{}

// Generation returns NopObserver.
func (NopObserver) Generation(string) GenerationObserver { return NopObserver{} }

// Tokens does nothing.
func (NopObserver) Tokens(string, llm.Usage) {}

// BatchLine does nothing.
func (NopObserver) BatchLine(bool) {}

// FirstToken does nothing.
func (NopObserver) FirstToken(time.Duration) {}

// InterToken does nothing.
func (NopObserver) InterToken(time.Duration, int) {}

// Observer returns the service's observer; never nil (NopObserver when none was configured).
// The batch runner reports finished lines through it: s.Observer().BatchLine(ok).
func (s *Service) Observer() Observer {
	if s.cfg.Observer == nil {
		return NopObserver{}
	}
	return s.cfg.Observer
}

type startKey struct{}

// withStart notes when a request arrived, for its time to first token.
func withStart(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, startKey{}, t)
}

// latency times one generation request's tokens for the observer.
type latency struct {
	obs   GenerationObserver
	start time.Time
	first atomic.Bool // the request's first token was observed
}

// latencyOf starts timing a generation request on m; nil (observing nothing) without an
// observer. A request that did not note its arrival is timed from now.
func (s *Service) latencyOf(ctx context.Context, m *Model) *latency {
	if s.cfg.Observer == nil {
		return nil
	}
	start, ok := ctx.Value(startKey{}).(time.Time)
	if !ok {
		start = time.Now()
	}
	return &latency{obs: s.cfg.Observer.Generation(m.ID), start: start}
}

// piece observes a piece of one choice's text that covers tokens tokens: the request's first
// token, or the gap since the choice's previous piece (*last, updated). Cheap: a clock read
// and the observer's atomic adds, no lock and no allocation.
func (l *latency) piece(last *time.Time, tokens int) {
	if l == nil || tokens <= 0 {
		return
	}
	now := time.Now()
	if last.IsZero() {
		if !l.first.Load() && l.first.CompareAndSwap(false, true) {
			l.obs.FirstToken(now.Sub(l.start))
		}
	} else {
		l.obs.InterToken(now.Sub(*last), tokens)
	}
	*last = now
}

// observeTokens reports a recorded request's tokens; res nil (no model reached) has none.
func (s *Service) observeTokens(res *Result) {
	if res == nil || res.Model == nil || s.cfg.Observer == nil {
		return
	}
	s.cfg.Observer.Tokens(res.Model.ID, res.Usage())
	so, ok := s.cfg.Observer.(SpeedObserver)
	if !ok || len(res.Choices) == 0 {
		return
	}
	sp := Speed{RestoredTokens: res.Choices[0].RestoredTokens}
	if spec := SpecReportOf(res.Choices...); spec != nil {
		sp.SpecProposed, sp.SpecAccepted = spec.Proposed, spec.Accepted
	}
	so.Speed(res.Model.ID, sp)
}
