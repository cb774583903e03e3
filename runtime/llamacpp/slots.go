package llamacpp

import (
	"context"
	"fmt"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
)

// stats are the loop's counters; only the loop goroutine touches them.
type stats struct {
	requests, promptTokens, cachedTokens, prefillComputed, decoded, copies int
	decodeRate, prefillRate                                                float64
	lastTick                                                               llm.TickPlan
}

// observe folds one tick into the rates.
// decodeTokens is the tokens the decode rows yielded: fewer than decodeRows when drafted rows
// were rejected (rev21b), and the decode rate is tokens per second.
func (s *stats) observe(decodeRows, decodeTokens, prefillRows, budget int, d time.Duration) {
	s.lastTick = llm.TickPlan{DecodeRows: decodeRows, PrefillRows: prefillRows, Budget: budget}
	s.decoded += decodeTokens
	s.prefillComputed += prefillRows
	if d <= 0 {
		return
	}
	// Attribute the tick to whichever kind of work it carried; mixed ticks update both by share.
	const alpha = 0.2
	total := float64(decodeRows + prefillRows)
	if decodeRows > 0 {
		share := d.Seconds() * float64(decodeRows) / total
		s.decodeRate = ewma(s.decodeRate, float64(decodeTokens)/share, alpha)
	}
	if prefillRows > 0 {
		share := d.Seconds() * float64(prefillRows) / total
		s.prefillRate = ewma(s.prefillRate, float64(prefillRows)/share, alpha)
	}
}

func ewma(old, sample, alpha float64) float64 {
	if old == 0 {
		return sample
	}
	return old + alpha*(sample-old)
}

// Slots returns a snapshot of the lanes, taken between ticks.
func (e *Engine) Slots(ctx context.Context) (llm.Slots, error) {
	if e.vocabOnly {
		return llm.Slots{}, nil // no lanes to report
	}
	reply := make(chan llm.Slots, 1)
	select {
	case e.snapshots <- reply:
	case <-ctx.Done():
		return llm.Slots{}, ctx.Err()
	case <-e.quit:
		return llm.Slots{}, fmt.Errorf("%w: %v", llm.ErrEngineFailure, errShutdown)
	}
	select {
	case s := <-reply:
		return s, nil
	case <-ctx.Done():
		return llm.Slots{}, ctx.Err()
	}
}

func (e *Engine) snapshot() llm.Slots {
	s := llm.Slots{
		Queued: len(e.queue), KVTotal: e.info.ContextLength * len(e.lanes), Tick: e.stats.lastTick,
		DecodeRate: e.stats.decodeRate, PrefillRate: e.stats.prefillRate,
		Totals: llm.Totals{
			Requests: e.stats.requests, PromptTokens: e.stats.promptTokens, CachedTokens: e.stats.cachedTokens,
			PrefillComputed: e.stats.prefillComputed, Decoded: e.stats.decoded, PrefixCopies: e.stats.copies,
			SpecProposed: e.spec.proposed, SpecAccepted: e.spec.accepted,
		},
	}
	e.disk.totals(&s.Totals)
	for _, l := range e.lanes {
		ls := llm.LaneState{ID: l.id, State: "idle", CachedTokens: len(l.cache), LastMiss: e.disk.laneMiss(l.id)}
		if j := l.job; j != nil {
			ls.State = "decode"
			if l.prefilling() {
				ls.State = "prefill"
			}
			ls.Task, ls.PromptTokens, ls.Generated = j.req.ID, len(j.prompt), j.generated
		}
		s.KVUsed += len(l.cache)
		s.Lanes = append(s.Lanes, ls)
	}
	return s
}
