package llamacpp

import (
	"math"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
)

// sample picks the lane's next token from batch row idx, streams its text and reports whether
// the job goes on, with the token in l.next.
func (e *Engine) sample(l *lane, idx int) bool {
	j := l.job
	logits := e.lctx.GetLogitsIth(idx)
	if !anyFinite(logits) {
		// Nothing to sample from (the grammar would index an empty candidate list): this
		// job fails, the lane's cache stays valid and the engine goes on.
		j.out.finish(llm.ErrModelFault)
		l.job = nil
		return false
	}
	token := j.sampler.Sample(logits)
	if j.grammar != nil {
		var ok bool
		if token, ok = e.constrain(j, logits, token); !ok {
			e.finish(l, llm.FinishStop) // the format is complete and nothing may follow
			return false
		}
	}
	j.sampler.Accept(token)
	if j.firstToken.IsZero() {
		j.firstToken = time.Now()
	}
	if !j.req.IgnoreEOS && e.model.TokenIsEog(token) {
		e.finish(l, llm.FinishStop)
		return false
	}
	if j.grammar != nil {
		j.grammar.Accept(int32(token))
	}
	j.generated++
	j.pending++
	piece := e.model.TokenToPiece(token)
	if j.logprobs {
		// After the end-of-generation check: a token that ends the reply unseen gets none.
		j.lps = append(j.lps, e.tokenLogprob(j, logits, token, piece))
	}
	out, stopped := j.text.Push([]byte(piece))
	if out != "" {
		j.out.put(llm.Event{Text: out, Tokens: j.pending, Logprobs: j.takeLogprobs()})
		j.pending = 0
	}
	switch {
	case stopped:
		e.finish(l, llm.FinishStop)
	case j.generated >= j.maxTokens:
		e.finish(l, llm.FinishLength)
	default:
		l.next = token
		return true
	}
	return false
}

// finish ends the lane's job successfully: flushes held-back text and sends Done.
func (e *Engine) finish(l *lane, reason string) {
	j := l.job
	l.job = nil
	now := time.Now()
	if rest := j.text.Flush(); rest != "" || j.pending > 0 {
		j.out.put(llm.Event{Text: rest, Tokens: j.pending, Logprobs: j.takeLogprobs()})
	}
	first := j.firstToken
	if first.IsZero() {
		first = now
	}
	j.out.put(llm.Event{Done: &llm.Done{
		FinishReason: reason,
		StopSequence: j.text.StopSequence(),
		Usage:        llm.Usage{PromptTokens: len(j.prompt), CompletionTokens: j.generated, CachedTokens: j.cached},
		Timings: llm.Timings{
			Queue:   j.started.Sub(j.submitted),
			Prefill: first.Sub(j.started),
			Decode:  now.Sub(first),
		},
		Lane:           l.id,
		Expired:        j.expired,
		RestoredTokens: j.kv.restored,
		CacheMiss:      j.kv.miss,
		Spec:           e.specDone(l, j),
	}})
	j.out.finish(nil)
}

// failAll ends every job with err and forgets the lanes' caches, whose KV state is unknown.
func (e *Engine) failAll(err error) {
	e.failJobs(err)
	if e.failure != nil {
		return // the context is broken: leave it alone (see fail)
	}
	for _, l := range e.lanes {
		e.lctx.KvCacheSeqRm(l.id, 0, -1)
		l.cache = l.cache[:0]
	}
}

// failJobs ends every job, running or queued, with err.
func (e *Engine) failJobs(err error) {
	for _, l := range e.lanes {
		if l.job != nil {
			l.job.out.finish(err)
			l.job = nil
		}
	}
	for _, j := range e.queue {
		j.out.finish(err)
	}
	e.queue = nil
}

// anyFinite reports whether some logit is a number a sampler can rank (not NaN or ±Inf). A
// working model's first logit already is, so this costs nothing there.
func anyFinite(logits []float32) bool {
	for _, v := range logits {
		if !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) {
			return true
		}
	}
	return false
}
