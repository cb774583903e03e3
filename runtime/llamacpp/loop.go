package llamacpp

import (
	"fmt"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
)

// lane is one llama.cpp sequence. cache holds the tokens its KV entries hold, in order.
type lane struct {
	id    int
	cache []int
	// partition is the cache partition of the jobs that computed cache (job.partition).
	partition string
	job       *job
	next      int // the sampled token to feed on the next tick (decode phase)
	// fed is what this tick put in the batch for the lane; logitIndex the batch row whose
	// logits it samples from afterwards, or -1.
	fed        []int
	logitIndex int
	// lastUsed orders free lanes for eviction: the least recently used cache goes first.
	lastUsed uint64
	spec     laneSpec // speculative decoding (spec.go)
}

func (l *lane) prefilling() bool { return len(l.cache) < len(l.job.prompt) }

// loop owns the llama.cpp context: every KV and batch operation happens on this goroutine.
func (e *Engine) loop() {
	defer close(e.done)
	for {
		if !e.busy() {
			select {
			case j := <-e.submit:
				e.queue = append(e.queue, j)
			case reply := <-e.snapshots:
				reply <- e.snapshot()
				continue
			case <-e.lora.wake:
				e.freeRetired()
				continue
			case <-e.quit:
				e.disk.saveLanes(e)
				return
			}
		}
		if !e.drain() {
			e.disk.saveLanes(e)
			e.failAll(fmt.Errorf("%w: %v", llm.ErrEngineFailure, errShutdown))
			return
		}
		if e.failure != nil {
			// The context is beyond use: answer every job with the failure until the worker
			// exits, and never touch llama.cpp again.
			e.failJobs(e.failure)
			continue
		}
		e.dropCancelled()
		e.freeRetired()
		e.assign()
		e.tick()
	}
}

func (e *Engine) busy() bool {
	if len(e.queue) > 0 {
		return true
	}
	for _, l := range e.lanes {
		if l.job != nil {
			return true
		}
	}
	return false
}

// drain takes every submission waiting right now; it reports false when the engine is closing.
func (e *Engine) drain() bool {
	for {
		select {
		case j := <-e.submit:
			e.queue = append(e.queue, j)
		case reply := <-e.snapshots:
			reply <- e.snapshot()
		case <-e.quit:
			return false
		default:
			return true
		}
	}
}

func (e *Engine) dropCancelled() {
	kept := e.queue[:0]
	for _, j := range e.queue {
		if err := j.ctx.Err(); err != nil {
			j.out.finish(err)
			continue
		}
		kept = append(kept, j)
	}
	e.queue = kept
	for _, l := range e.lanes {
		if l.job != nil && l.job.ctx.Err() != nil {
			l.job.out.finish(l.job.ctx.Err())
			l.job = nil
		}
	}
	e.expire()
}

// expire finishes jobs whose deadline has passed, queued ones included, with what they have.
func (e *Engine) expire() {
	now := time.Now()
	for _, l := range e.lanes {
		if j := l.job; j != nil && j.expiredAt(now) {
			j.expired = true
			e.finish(l, llm.FinishLength)
		}
	}
	kept := e.queue[:0]
	for _, j := range e.queue {
		if !j.expiredAt(now) {
			kept = append(kept, j)
			continue
		}
		j.expired, j.started, j.lane = true, now, -1
		j.out.put(llm.Event{Started: &llm.Started{PromptTokens: len(j.prompt), Lane: -1}})
		e.finish(&lane{id: -1, job: j}, llm.FinishLength)
	}
	e.queue = kept
}

func commonPrefix(a, b []int) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// tickLanes sends one batch for lanes (of one adapter set, see tick): a token for every
// decoding lane, then prompt chunks within prefill rows. It reports false when the decode
// failed.
func (e *Engine) tickLanes(lanes []*lane, prefill int) (tickCounts, bool) {
	e.batch.Clear()
	rows := 0
	for _, l := range lanes {
		l.fed, l.logitIndex = l.fed[:0], -1
		if l.job == nil || l.prefilling() {
			continue
		}
		l.logitIndex = rows
		l.fed = append(l.fed, l.next)
		e.batch.Add(l.next, nil, len(l.cache), true, l.id)
		rows++
		for i, t := range l.spec.draft {
			e.batch.Add(t, nil, len(l.cache)+1+i, true, l.id)
			rows++
		}
	}
	decodeRows := rows
	limit := rows + prefill
	for _, l := range lanes {
		if l.job == nil || !l.prefilling() || rows >= limit {
			continue
		}
		from := len(l.cache)
		// Text stops before a media chunk; evalMedia evaluates the chunk whole.
		to := l.job.media.textEnd(from, min(len(l.job.prompt), from+limit-rows))
		for i := from; i < to; i++ {
			last := i == len(l.job.prompt)-1
			if last {
				l.logitIndex = rows
			}
			e.batch.Add(l.job.prompt[i], nil, i, last, l.id)
			rows++
		}
		l.fed = append(l.fed, l.job.prompt[from:to]...)
	}
	if rows == 0 {
		return tickCounts{}, true
	}
	began := time.Now()
	if err := e.decode(e.batch); err != nil {
		if fatalDecode(err) {
			e.fail(fmt.Errorf("%w: llama_decode: %v; the worker exits and the next request starts a new one", llm.ErrEngineFailure, err))
			return tickCounts{}, false
		}
		e.failAll(fmt.Errorf("%w: llama_decode: %v", llm.ErrEngineFailure, err))
		return tickCounts{}, false
	}
	synchronize(e.lctx) // the sampling below would wait for it anyway; the time includes it
	elapsed := time.Since(began)
	e.spec.cost.observe(rows-decodeRows, elapsed)
	unused := 0 // decode rows that yielded no token: rejected drafts, rows past the job's end
	for _, l := range lanes {
		if l.job == nil || len(l.fed) == 0 {
			continue
		}
		l.cache = append(l.cache, l.fed...)
		switch {
		case len(l.spec.draft) > 0:
			unused += e.verify(l)
		case l.logitIndex >= 0:
			e.sample(l, l.logitIndex)
		}
	}
	return tickCounts{decodeRows: decodeRows, unused: unused, prefillRows: rows - decodeRows, elapsed: elapsed}, true
}
