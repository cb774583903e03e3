package llamacpp

import (
	"fmt"
	"os"
	"time"

	"github.com/ollama/ollama/llama"

	"github.com/superfluid/superfluid/runtime/llm"
)

// Speculative decoding: a decoding lane puts its next token and up to k drafted tokens in the
// tick's batch, all with logits, and verify samples them row by row with the job's own
// sampler. A drafted token is kept while the sampled token equals it; the first mismatch's
// sampled token becomes the next one. A drafter proposes one token per position (a point
// mass), for which the standard rejection rule is exactly this, so the output follows the
// target model's distribution and greedy output is the same as without speculation; grammar,
// logprobs and stop strings see the same tokens in the same order.

// defaultDraftTokens is the most tokens drafted per step when neither the request nor the
// model's options say (measured: spec_bench_test.go).
const defaultDraftTokens = 8

// specState is the engine's speculation: the defaults from Options, the draft model and the
// totals reported in /slots.
type specState struct {
	mode        string
	draftTokens int
	draft       *draftModel // nil when no draft model is loaded
	proposed    int
	accepted    int
	cost        rowCost
	// untrimmable is set for a recurrent or hybrid model, whose state cannot take back a
	// rejected draft: speculation stays off for it (rev21b).
	untrimmable bool
}

// laneSpec is one lane's speculation for the job it runs.
type laneSpec struct {
	job   *job // the job this state was set up for; another job starts afresh
	mode  string
	maxK  int
	k     int // the current draft length, adapted to what was accepted
	stats llm.SpecStats
	// rate is a running acceptance rate; below pauseBelow drafting pauses for pauseLeft
	// steps, longer each time (pauses).
	rate      float64
	verified  int
	pauseLeft int
	pauses    int
	// draft holds the tokens drafted this tick, fed after the lane's next token; budget is
	// the most it may hold.
	draft   []int
	budget  int
	history []int // scratch: the lane's tokens, for the n-gram search
}

// trustDrafts breaks verification (every drafted token is kept) so that the statistical test
// can show it notices; never set outside tests.
var trustDrafts = false

// loadSpec takes the speculation defaults from opts and loads the draft model, if any (an
// embedding model gets none: it does not generate).
func (e *Engine) loadSpec(opts Options, params llama.ModelParams, embeds bool) error {
	e.spec.mode, e.spec.draftTokens = opts.Speculative, opts.DraftTokens
	e.spec.untrimmable = !embeds && !trimsTail(e.model)
	if e.spec.draftTokens < 0 || e.spec.draftTokens > llm.MaxDraftTokens {
		return fmt.Errorf("speculative: draft tokens %d is outside 1-%d", opts.DraftTokens, llm.MaxDraftTokens)
	}
	if opts.DraftModelPath == "" || embeds {
		return nil
	}
	d, err := loadDraft(opts, params, e.model)
	if err != nil {
		return err
	}
	if !trimsTail(d.model) {
		// Its state cannot take back the drafts the target rejects: every rejection would
		// recompute the lane's whole history in it (rev21b). n-gram drafting stands in.
		fmt.Fprintf(os.Stderr, "superfluid worker: warning: the draft model %s is recurrent or hybrid and cannot drop rejected drafts; it is not used\n", opts.DraftModelPath)
		d.close()
		return nil
	}
	d.ends = e.model.TokenIsEog
	e.spec.draft = d
	e.info.DraftModel = opts.DraftModelPath
	return nil
}

// checkSpeculative refuses a request's speculation settings the engine does not know.
func checkSpeculative(req *llm.Request) error {
	s := req.Speculative
	if s == nil {
		return nil
	}
	if err := checkSpecMode(s.Mode); err != nil {
		return fmt.Errorf("%w: speculative: %v", llm.ErrInvalidInput, err)
	}
	if s.DraftTokens < 0 || s.DraftTokens > llm.MaxDraftTokens {
		return fmt.Errorf("%w: speculative: draft_tokens %d is outside 1-%d", llm.ErrInvalidInput, s.DraftTokens, llm.MaxDraftTokens)
	}
	return nil
}

func checkSpecMode(mode string) error {
	switch mode {
	case "", llm.SpecOff, llm.SpecNgram, llm.SpecDraft:
		return nil
	}
	return fmt.Errorf("unknown mode %q (allowed: %s, %s, %s)", mode, llm.SpecOff, llm.SpecNgram, llm.SpecDraft)
}

// resolve is the mode and draft length in effect for req, and a note when it is not what was
// asked.
func (s *specState) resolve(req *llm.Request) (mode string, k int, note string) {
	mode, k = s.mode, s.draftTokens
	if r := req.Speculative; r != nil {
		if r.Mode != "" {
			mode = r.Mode
		}
		if r.DraftTokens > 0 {
			k = r.DraftTokens
		}
	}
	if mode == "" || s.untrimmable {
		mode = llm.SpecOff
	}
	if k <= 0 {
		k = defaultDraftTokens
	}
	k = min(k, llm.MaxDraftTokens)
	if mode == llm.SpecDraft && s.draft == nil {
		mode, note = llm.SpecNgram, "no draft model is loaded; n-gram drafting instead"
	}
	if len(req.Media) > 0 && mode != llm.SpecOff {
		// A media position is an embedding, not a token a drafter could read or a draft
		// model decode.
		mode, note = llm.SpecOff, "speculation is off for a prompt with images or audio"
	}
	return mode, k, note
}

// laneSpecFor is lane l's speculation state for its current job, set up on first use.
func (e *Engine) laneSpecFor(l *lane) *laneSpec {
	ls := &l.spec
	if ls.job != l.job {
		mode, k, note := e.spec.resolve(l.job.req)
		*ls = laneSpec{job: l.job, mode: mode, maxK: k, k: k, draft: ls.draft[:0], history: ls.history[:0], rate: 1}
		ls.stats = llm.SpecStats{Mode: mode, Note: note}
		if mode == llm.SpecOff {
			ls.stats.Mode = ""
		}
	}
	return ls
}

// specDone is the Done event's Spec for job j ending on lane l (nil when speculation was off),
// and adds it to the totals.
func (e *Engine) specDone(l *lane, j *job) *llm.SpecStats {
	var stats llm.SpecStats
	if l.spec.job == j && l.spec.job != nil {
		if l.spec.mode == llm.SpecOff && l.spec.stats.Note == "" {
			return nil
		}
		stats = l.spec.stats
		l.spec.job = nil // counted once
	} else {
		// The job never decoded a token (it expired in the queue, or max_tokens 0).
		mode, _, note := e.spec.resolve(j.req)
		if mode == llm.SpecOff && note == "" {
			return nil
		}
		stats = llm.SpecStats{Mode: mode, Note: note}
		if mode == llm.SpecOff {
			stats.Mode = ""
		}
	}
	e.spec.proposed += stats.Proposed
	e.spec.accepted += stats.Accepted
	return &stats
}

// planDrafts fills each decoding lane's draft for this tick within the batch budget: the
// lanes' next tokens come first, and a quarter of the batch stays free for prompt chunks
// while a lane prefills.
func (e *Engine) planDrafts() {
	decoding, prefilling := 0, false
	for _, l := range e.lanes {
		l.spec.draft = l.spec.draft[:0]
		if l.job == nil {
			continue
		}
		if l.prefilling() {
			prefilling = true
		} else {
			decoding++
		}
	}
	e.spec.cost.lanes, e.spec.cost.drafts = decoding, 0
	budget := e.batchSize - decoding
	if prefilling {
		budget -= e.batchSize / 4
	}
	var byModel []*lane
	for _, l := range e.lanes {
		if l.job == nil || l.prefilling() || budget <= 0 {
			continue
		}
		ls := e.laneSpecFor(l)
		k := ls.want(l, e.info.ContextLength)
		k = min(k, budget)
		if k <= 0 {
			continue
		}
		switch ls.mode {
		case llm.SpecNgram:
			ls.history = append(append(ls.history[:0], l.cache...), l.next)
			ls.draft = ngramDraft(ls.history, k, ls.draft[:0])
			budget -= len(ls.draft)
		case llm.SpecDraft:
			ls.budget = k
			byModel = append(byModel, l)
			budget -= k
		}
	}
	e.spec.cost.drafting = 0
	if len(byModel) > 0 {
		began := time.Now()
		e.spec.draft.propose(byModel)
		e.spec.cost.drafting = time.Since(began)
	}
	for _, l := range e.lanes {
		if len(l.spec.draft) > 0 {
			l.spec.stats.Proposed += len(l.spec.draft)
			e.spec.cost.drafts += len(l.spec.draft)
		}
	}
}

// want is how many tokens the lane drafts this tick: its adapted k, no more than the job may
// still generate (each row yields one token) or its window holds, and none while paused.
func (ls *laneSpec) want(l *lane, window int) int {
	if ls.mode == llm.SpecOff {
		return 0
	}
	if ls.pauseLeft > 0 {
		ls.pauseLeft--
		return 0
	}
	j := l.job
	k := min(ls.k, j.maxTokens-j.generated-1, window-len(l.cache)-2)
	return max(k, 0)
}

// verify samples the rows of a lane that fed its next token and a draft: row i's token is kept
// and the next row sampled while it equals draft i. It leaves l.cache holding exactly the kept
// tokens, removes the rest from the KV cache and sets l.next to the last sampled token. It
// returns how many of the lane's rows yielded no token.
func (e *Engine) verify(l *lane) int {
	ls := &l.spec
	draft := ls.draft
	kept := 0
	for i := 0; ; i++ {
		if !e.sample(l, l.logitIndex+i) {
			break // the job ended (stop, length, EOS, a complete format or a fault)
		}
		if i == len(draft) || (l.next != draft[i] && !trustDrafts) {
			break
		}
		l.cache = append(l.cache, draft[i])
		ls.stats.Accepted++
		kept++
	}
	e.lctx.KvCacheSeqRm(l.id, len(l.cache), -1)
	ls.adapt(len(draft), kept, e.spec.cost.breakEven())
	ls.draft = ls.draft[:0]
	return len(draft) - kept // its rows: 1+len(draft); those sampled: at most kept+1
}

// Adaptation: the draft length halves toward what was accepted after a rejection and doubles
// after a full acceptance; when the running acceptance rate falls below the rate at which a
// drafted row pays for itself (rowCost.breakEven; pauseBelow until measured) drafting pauses,
// for pauseSteps tokens the first time and twice as long each time after.
const (
	pauseBelow   = 0.3
	pauseSteps   = 8
	pauseMax     = 512
	rateWeight   = 0.25
	minVerified  = 4
	resumeLength = 2
)

func (ls *laneSpec) adapt(proposed, kept int, breakEven float64) {
	if proposed == 0 {
		return
	}
	ls.rate += rateWeight * (float64(kept)/float64(proposed) - ls.rate)
	ls.verified++
	if kept == proposed {
		ls.k = min(ls.maxK, 2*ls.k)
	} else {
		ls.k = max(1, min(ls.k-1, (ls.k+kept+1)/2))
	}
	if breakEven <= 0 {
		breakEven = pauseBelow
	}
	if ls.verified >= minVerified && ls.rate < breakEven {
		ls.pauseLeft = min(pauseMax, pauseSteps<<ls.pauses)
		ls.pauses++
		ls.verified, ls.rate = 0, breakEven // a fresh look after the pause
		ls.k = min(ls.maxK, resumeLength)
	}
}

// rowCost learns what a drafted row costs from the loop's decode-only ticks: the time of a
// tick of n lanes without drafts (plain, per lane count) against one with d drafted rows more.
// lanes and drafts describe the tick being sent; only the loop goroutine touches it.
type rowCost struct {
	lanes, drafts int
	// drafting is the time the draft model took for the tick being sent (0 without one): a
	// drafted row costs it too (rev21b).
	drafting time.Duration
	plain    map[int]float64 // seconds per tick of that many lanes, no drafts
	perRow   float64         // seconds per drafted row
}

// observe folds a decode-only tick of d into the estimates.
func (c *rowCost) observe(prefillRows int, d time.Duration) {
	if prefillRows > 0 || c.lanes == 0 || d <= 0 || (c.drafts == 0 && c.drafting > 0) {
		return // not a plain tick (the draft model caught up and drafted nothing) nor a drafted one
	}
	d += c.drafting
	const alpha = 0.1
	if c.plain == nil {
		c.plain = map[int]float64{}
	}
	if c.drafts == 0 {
		c.plain[c.lanes] = ewma(c.plain[c.lanes], d.Seconds(), alpha)
		return
	}
	if base, ok := c.plain[c.lanes]; ok {
		c.perRow = ewma(c.perRow, max(0, d.Seconds()-base)/float64(c.drafts), alpha)
	}
}

// breakEven is the acceptance rate at which drafting pays: a drafted row costs perRow, a kept
// one saves a lane its share of a tick. 0 while not measured. The margin covers the drafting
// itself and the estimates' noise.
func (c *rowCost) breakEven() float64 {
	base, ok := c.plain[c.lanes]
	if !ok || c.perRow == 0 || base <= 0 {
		return 0
	}
	const margin = 1.15
	return min(0.9, margin*c.perRow*float64(c.lanes)/base)
}
