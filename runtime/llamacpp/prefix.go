package llamacpp

import (
	"context"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
)

// minShare is the shortest prefix worth copying from a busy lane or waiting for: below it,
// recomputing is cheaper than the bookkeeping.
const minShare = 32

// assign moves queued jobs to free lanes. A job goes to the free lane whose cache shares the
// longest token prefix with its prompt; when a busy lane holds a longer prefix, that prefix is
// copied into a free lane instead of recomputed; when a busy lane is still prefilling a prefix
// the job shares, the job waits for it, so N requests with one long system prompt compute it
// once. Jobs that wait do not hold up the jobs behind them, with one exception: interactive
// jobs go first (llm.Request.Priority), and a background job takes a lane only when no
// interactive job is left waiting, so an interactive job waits for at most the background job
// running on a lane.
func (e *Engine) assign() {
	interactiveWaits := false
	for _, j := range e.queue {
		if j.req.Priority == llm.PriorityInteractive {
			j.placed = e.place(j)
			interactiveWaits = interactiveWaits || !j.placed
		}
	}
	if !interactiveWaits {
		for _, j := range e.queue {
			if j.req.Priority != llm.PriorityInteractive {
				j.placed = e.place(j)
			}
		}
	}
	kept := e.queue[:0]
	for _, j := range e.queue {
		if !j.placed {
			kept = append(kept, j)
		}
	}
	clear(e.queue[len(kept):]) // no stale pointers past the end
	e.queue = kept
}

// place starts j on a lane and reports whether it did.
func (e *Engine) place(j *job) bool {
	if j.req.NoCache {
		if l := e.evictable(); l != nil {
			e.start(l, j, 0)
			return true
		}
		return false
	}
	var free *lane
	freeCommon := -1
	for _, l := range e.lanes {
		if l.job != nil {
			continue
		}
		if c := reusable(l, l.cache, j); c > freeCommon || (c == freeCommon && l.lastUsed < free.lastUsed) {
			free, freeCommon = l, c
		}
	}
	if free == nil {
		return false
	}
	var donor *lane
	donorCommon := freeCommon
	for _, l := range e.lanes {
		if l.job == nil {
			continue
		}
		computed := reusable(l, l.cache, j)
		if computed > donorCommon {
			donor, donorCommon = l, computed
		}
		// The busy lane will compute more of this prompt soon: wait rather than duplicate it.
		if planned := reusable(l, l.job.prompt, j); planned > computed && planned-max(freeCommon, computed) >= minShare {
			return false
		}
	}
	if donor != nil && donorCommon-freeCommon >= minShare {
		target := e.evictable()
		e.copyPrefix(donor, target, donorCommon)
		e.start(target, j, donorCommon)
		return true
	}
	if l, common := e.disk.restore(e, j, max(freeCommon, donorCommon)); l != nil {
		e.start(l, j, common)
		return true
	}
	e.start(free, j, freeCommon)
	return true
}

// reusable is how much of j's prompt lane l's tokens (its cache, or its job's prompt) may
// serve: their common prefix, or when l works for another cache partition, no more of it than
// the shared prefix's tokens (j.shared; usually 0), and nothing when l's tokens were computed
// under other adapters (their KV differs whatever the tokens).
// A prefix ending inside one of j's media chunks is rounded down to the chunk's start.
func reusable(l *lane, tokens []int, j *job) int {
	if l.partition != j.partition {
		if j.shared == 0 || partitionAdapters(l.partition) != partitionAdapters(j.partition) {
			return 0
		}
		return j.media.roundDown(min(j.shared, commonPrefix(tokens, j.prompt)))
	}
	return j.media.roundDown(commonPrefix(tokens, j.prompt))
}

// sharedTokens is how many of prompt's leading tokens are req.SharedPrefix's: the tokens
// compared, not the text, and 0 when there is no shared prefix or it cannot be tokenized (the
// request then shares nothing across partitions, as without one).
func (e *Engine) sharedTokens(ctx context.Context, req *llm.Request, prompt []int) int {
	if req.SharedPrefix == "" || req.NoCache {
		return 0
	}
	tokens, err := e.Tokenize(ctx, req.SharedPrefix, req.AddSpecial, true)
	if err != nil {
		return 0
	}
	return commonPrefix(tokens, prompt)
}

// evictable is the free lane whose cache was used least recently.
func (e *Engine) evictable() *lane {
	var victim *lane
	for _, l := range e.lanes {
		if l.job == nil && (victim == nil || l.lastUsed < victim.lastUsed) {
			victim = l
		}
	}
	return victim
}

// copyPrefix makes dst hold the first n cached tokens of src. Without a unified KV cache
// llama.cpp copies only whole sequences between streams, so copy all of src and trim.
func (e *Engine) copyPrefix(src, dst *lane, n int) {
	e.disk.dropping(e, dst, 0)
	e.lctx.KvCacheSeqRm(dst.id, 0, -1)
	e.lctx.KvCacheSeqCp(src.id, dst.id, -1, -1)
	e.lctx.KvCacheSeqRm(dst.id, n, -1)
	dst.cache = append(dst.cache[:0], src.cache[:n]...)
	dst.partition = src.partition
	e.stats.copies++
}

// start binds j to lane l, keeping the first common tokens of l's cache.
func (e *Engine) start(l *lane, j *job, common int) {
	// At least one prompt token must be decoded to get logits for the first sample (a whole
	// media chunk when the prompt ends with one).
	common = j.media.roundDown(min(common, len(j.prompt)-1))
	j.kv.miss = e.disk.miss(e, j, common)
	e.disk.dropping(e, l, common)
	if !e.lctx.KvCacheSeqRm(l.id, common, -1) {
		e.lctx.KvCacheSeqRm(l.id, 0, -1)
		common = 0
	}
	e.clock++
	l.cache = l.cache[:common]
	l.partition = j.partition
	l.job, l.logitIndex, l.lastUsed = j, -1, e.clock
	j.lane, j.cached, j.started = l.id, common, time.Now()
	e.stats.requests++
	e.stats.promptTokens += len(j.prompt)
	e.stats.cachedTokens += common
	e.disk.noted(l, j)
	j.out.put(llm.Event{Started: &llm.Started{PromptTokens: len(j.prompt), CachedTokens: common, Lane: l.id,
		RestoredTokens: j.kv.restored, CacheMiss: j.kv.miss}})
	for _, t := range j.prompt[max(0, len(j.prompt)-llm.RepeatLastN):] {
		j.sampler.Accept(t) // it ignores a media position's pseudo token (negative)
	}
	if j.maxTokens <= 0 {
		e.finish(l, llm.FinishLength)
	}
}
