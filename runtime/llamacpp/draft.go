package llamacpp

import (
	"fmt"
	"os"

	"github.com/ollama/ollama/llama"
	"github.com/ollama/ollama/ml"
)

// draftModel is a small model with the target's vocabulary, in its own context with one
// sequence per lane, that drafts tokens greedily for the lanes in SpecDraft mode. It keeps
// its own token list per lane and catches up on whatever the target lane holds: the target's
// cache may have come from the loop's ticks, a copy from another lane or a disk restore.
type draftModel struct {
	path      string
	model     *llama.Model
	lctx      *llama.Context
	batch     *llama.Batch
	batchSize int
	cache     [][]int // per lane: the tokens the draft context's sequence holds
	// partition is, per lane, the cache partition whose tokens cache holds: another
	// partition's lane reuses no more of them than the target's KV would (reusable).
	partition []string
	decode    func(*llama.Batch) error
	// ends reports whether a token ends generation (the target's end-of-generation tokens).
	ends func(token int) bool
}

// loadDraft loads opts.DraftModelPath beside target: same backend and offload, a window per
// lane the size of the target's. A vocabulary that differs from the target's fails.
func loadDraft(opts Options, params llama.ModelParams, target *llama.Model) (*draftModel, error) {
	st, err := os.Stat(opts.DraftModelPath)
	if err != nil {
		return nil, fmt.Errorf("load draft model: %w", err)
	}
	if _, err := readMeta(opts.DraftModelPath); err != nil {
		return nil, fmt.Errorf("load draft model: %w", err)
	}
	model, err := llama.LoadModelFromFile(opts.DraftModelPath, params)
	if err != nil {
		return nil, fmt.Errorf("load draft model %s: llama.cpp could not read it (see the log above for why)", opts.DraftModelPath)
	}
	if got, want := model.NumVocab(), target.NumVocab(); got != want {
		llama.FreeModel(model)
		return nil, fmt.Errorf("draft model %s has a vocabulary of %d tokens, the model %s one of %d: a draft model must share the target's vocabulary",
			opts.DraftModelPath, got, opts.ModelPath, want)
	}
	if tst, err := os.Stat(opts.ModelPath); err == nil && st.Size() > tst.Size() {
		fmt.Fprintf(os.Stderr, "superfluid worker: warning: the draft model %s (%d bytes) is bigger than the model it drafts for, %s (%d bytes); speculation will likely be slower than plain decoding\n",
			opts.DraftModelPath, st.Size(), opts.ModelPath, tst.Size())
	}
	ctxParams := llama.NewContextParams(opts.ContextLength*opts.Parallel, opts.BatchSize, opts.Parallel,
		threadsFor(st.Size()), ml.FlashAttentionDisabled, "")
	lctx, err := llama.NewContextWithModel(model, ctxParams)
	if err != nil {
		llama.FreeModel(model)
		return nil, fmt.Errorf("create the draft model's context for %s: %w", opts.DraftModelPath, err)
	}
	batch, err := llama.NewBatch(opts.BatchSize, opts.Parallel, 0)
	if err != nil {
		llama.FreeModel(model)
		return nil, fmt.Errorf("allocate the draft model's batch: %w", err)
	}
	d := &draftModel{path: opts.DraftModelPath, model: model, lctx: lctx, batch: batch, batchSize: opts.BatchSize,
		cache: make([][]int, opts.Parallel), partition: make([]string, opts.Parallel)}
	d.decode = lctx.Decode
	return d, nil
}

func (d *draftModel) close() {
	if d == nil {
		return
	}
	d.batch.Free()
	llama.FreeModel(d.model)
}

// propose fills each lane's draft with up to its budget of greedy tokens. The draft context
// first catches up on the lane's tokens (its cache and next token), then k steps run batched
// across the lanes. A failed decode leaves the lanes without a draft this tick.
func (d *draftModel) propose(lanes []*lane) {
	if err := d.run(lanes); err != nil {
		fmt.Fprintf(os.Stderr, "superfluid worker: the draft model failed (%v); this step decodes without a draft\n", err)
		for _, l := range lanes {
			l.spec.draft = l.spec.draft[:0]
			d.lctx.KvCacheSeqRm(l.id, 0, -1)
			d.cache[l.id] = d.cache[l.id][:0]
		}
	}
}

// pendingLane is a lane's catch-up in the draft context: the tokens still to feed.
type pendingLane struct {
	l    *lane
	feed []int
	row  int // the batch row of its last fed token, whose logits give the next draft; -1 if none
}

func (d *draftModel) run(lanes []*lane) error {
	pending := make([]*pendingLane, 0, len(lanes))
	for _, l := range lanes {
		seq := append(l.spec.history[:0], l.cache...)
		seq = append(seq, l.next)
		l.spec.history = seq
		have := d.cache[l.id]
		// At least one token is fed, for the logits of the first draft.
		common := min(commonPrefix(have, seq), len(seq)-1)
		if d.partition[l.id] != l.partition {
			common = min(common, l.job.shared) // as reusable: only the shared prefix crosses
			d.partition[l.id] = l.partition
		}
		if !d.lctx.KvCacheSeqRm(l.id, common, -1) {
			d.lctx.KvCacheSeqRm(l.id, 0, -1)
			common = 0
		}
		d.cache[l.id] = have[:common]
		pending = append(pending, &pendingLane{l: l, feed: seq[common:], row: -1})
	}
	// Catch up, one batch per tick (rev21b): the other lanes wait for this tick, as they wait
	// for a prompt chunk; a lane's last catch-up row yields its first draft, and a lane not
	// caught up yet drafts nothing this tick and goes on from where it is on the next.
	d.batch.Clear()
	rows := 0
	for _, p := range pending {
		n := min(len(p.feed), d.batchSize-rows)
		if n <= 0 {
			continue
		}
		pos := len(d.cache[p.l.id])
		for i, t := range p.feed[:n] {
			last := i == len(p.feed)-1
			if last {
				p.row = rows
			}
			d.batch.Add(t, nil, pos+i, last, p.l.id)
			rows++
		}
		d.cache[p.l.id] = append(d.cache[p.l.id], p.feed[:n]...)
		p.feed = p.feed[n:]
	}
	if rows > 0 {
		if err := d.decode(d.batch); err != nil {
			return err
		}
		for _, p := range pending {
			if p.row >= 0 {
				d.take(p)
			}
		}
	}
	// Greedy steps: feed each lane's last draft and take the next, until every budget is met.
	for {
		d.batch.Clear()
		rows := 0
		for _, p := range pending {
			ls := &p.l.spec
			p.row = -1
			if len(ls.draft) == 0 || len(ls.draft) >= ls.budget || d.ends(ls.draft[len(ls.draft)-1]) {
				continue
			}
			pos := len(d.cache[p.l.id])
			t := ls.draft[len(ls.draft)-1]
			p.row = rows
			d.batch.Add(t, nil, pos, true, p.l.id)
			d.cache[p.l.id] = append(d.cache[p.l.id], t)
			rows++
		}
		if rows == 0 {
			return nil
		}
		if err := d.decode(d.batch); err != nil {
			return err
		}
		for _, p := range pending {
			if p.row >= 0 {
				d.take(p)
			}
		}
	}
}

// take appends the greedy token of p's row to its lane's draft.
func (d *draftModel) take(p *pendingLane) {
	logits := d.lctx.GetLogitsIth(p.row)
	p.row = -1
	if len(logits) == 0 {
		return
	}
	p.l.spec.draft = append(p.l.spec.draft, argmaxLogits(logits))
}

func argmaxLogits(logits []float32) int {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	return best
}
