package llamacpp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/llm"
)

// An embedding model (gguf.File.Embedding: a pooling type, or an encoder architecture such as
// BERT) runs a loop of its own instead of the generation lanes. Each tick embeds one whole
// sequence: llama.cpp pools (and an encoder attends) within one micro-batch only, so the
// engine's window and micro-batch are the same size (embeddingWindow). One sequence per batch
// makes a vector a function of its input alone: packed batches change the matrix shapes, and
// with them the float rounding, so the same text could come back a few ulps apart depending
// on what it shared a batch with. Requests take turns, one sequence each, so a request of
// thousands of inputs does not hold up a request of one. The KV cache (models that have one)
// is cleared after every sequence.

// embedState is the embedding loop's state; only the loop touches queue.
type embedState struct {
	submit chan *embedJob
	// pooling is the context's llama.cpp pooling type (gguf.PoolingNone ... PoolingRank);
	// length the floats per vector.
	pooling, length int
	queue           []*embedJob

	// lead and trail are the special tokens the tokenizer adds before and after a text.
	endsOnce    sync.Once
	lead, trail []int
}

// embedJob is one Embed call as the loop sees it.
type embedJob struct {
	ctx     context.Context
	seqs    [][]int
	vectors [][]float32
	next    int // the first sequence not yet sent
	done    chan error
}

// embeddingWindow is the window and micro-batch of an embedding model: no longer than the
// model was trained for (a BERT has no position embedding past it), and one micro-batch holds
// a whole window.
func embeddingWindow(ctx, train int) (window, batch int) {
	if train > 0 {
		ctx = min(ctx, train)
	}
	return ctx, ctx
}

// startEmbedding describes the model's vectors and starts the embedding loop.
func (e *Engine) startEmbedding() {
	pooling := contextPooling(e.lctx)
	length := e.model.NEmbd()
	if pooling == gguf.PoolingRank {
		length = max(1, rankOutputs(e.lctx))
	}
	e.embeds = &embedState{submit: make(chan *embedJob), pooling: pooling, length: length}
	e.info.Embedding = &llm.Embedding{Pooling: gguf.PoolingName(pooling), Length: length}
	go e.embedLoop()
}

func errEmbeddingOnly(info llm.ModelInfo) error {
	return fmt.Errorf("%w: %s is an embedding model; it serves embeddings and rerank (/v1/embeddings, /v1/rerank, /api/embed), not generation",
		llm.ErrUnsupportedModel, info.Path)
}

// Embed returns one pooled vector (for a rank head, its scores) per input.
func (e *Engine) Embed(ctx context.Context, req *llm.EmbedRequest) (*llm.EmbedResult, error) {
	if e.embeds == nil {
		return nil, fmt.Errorf("%w: %s is a generation model; it has no pooling head and does not embed", llm.ErrUnsupportedModel, e.info.Path)
	}
	if len(req.Inputs) == 0 {
		return nil, fmt.Errorf("%w: nothing to embed; give at least one input", llm.ErrInvalidInput)
	}
	res := &llm.EmbedResult{Tokens: make([]int, len(req.Inputs))}
	seqs := make([][]int, len(req.Inputs))
	for i, in := range req.Inputs {
		tokens, err := e.embedTokens(ctx, in, req.Truncate)
		if err != nil {
			var cl *llm.ContextLengthError
			if errors.As(err, &cl) {
				return nil, err // typed, so that it crosses the worker socket whole
			}
			return nil, fmt.Errorf("input %d: %w", i, err)
		}
		seqs[i], res.Tokens[i] = tokens, len(tokens)
	}
	j := &embedJob{ctx: ctx, seqs: seqs, vectors: make([][]float32, len(seqs)), done: make(chan error, 1)}
	select {
	case e.embeds.submit <- j:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-e.quit:
		return nil, fmt.Errorf("%w: the engine is shutting down", llm.ErrEngineFailure)
	case <-e.failed:
		return nil, e.failure
	}
	select {
	case err := <-j.done:
		if err != nil {
			return nil, err
		}
	case <-ctx.Done():
		return nil, ctx.Err() // the loop drops the job at its next tick
	}
	res.Vectors = j.vectors
	return res, nil
}

// embedTokens is one input as token ids: checked against the vocabulary, within the window.
func (e *Engine) embedTokens(ctx context.Context, in llm.EmbedInput, truncate bool) ([]int, error) {
	tokens := in.Tokens
	if len(tokens) > 0 {
		if in.Text != "" || in.Pair != "" {
			return nil, fmt.Errorf("%w: give an input as text or as token ids, not both", llm.ErrInvalidInput)
		}
		for _, t := range tokens {
			if t < 0 || t >= e.info.VocabSize {
				return nil, fmt.Errorf("%w: token id %d is outside the vocabulary (0-%d)", llm.ErrInvalidInput, t, e.info.VocabSize-1)
			}
		}
	} else {
		var err error
		if tokens, err = e.textTokens(ctx, in.Text); err != nil {
			return nil, err
		}
		if in.Pair != "" {
			pair, err := e.textTokens(ctx, in.Pair)
			if err != nil {
				return nil, err
			}
			lead, _ := e.specialEnds(ctx)
			if len(lead) > 0 && len(pair) >= len(lead) && slices.Equal(pair[:len(lead)], lead) {
				pair = pair[len(lead):]
			}
			tokens = append(tokens, pair...)
		}
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("%w: the input is empty", llm.ErrInvalidInput)
	}
	window := e.info.ContextLength
	if len(tokens) <= window {
		return tokens, nil
	}
	if !truncate {
		return nil, &llm.ContextLengthError{PromptTokens: len(tokens), ContextLength: window}
	}
	// Keep the special tokens the tokenizer put at the end ([SEP]): cut the text before them.
	_, trail := e.specialEnds(ctx)
	if len(in.Tokens) > 0 || len(trail) >= window || !slices.Equal(tokens[len(tokens)-len(trail):], trail) {
		trail = nil
	}
	return append(tokens[:window-len(trail):window-len(trail)], trail...), nil
}

func (e *Engine) textTokens(ctx context.Context, text string) ([]int, error) {
	tokens, err := e.Tokenize(ctx, text, true, false)
	// A closed engine, a caller that gave up (waiting for the tokenizer's memory budget) and a
	// refusal that already says why pass as they are.
	if errors.Is(err, errClosed) || errors.Is(err, llm.ErrInvalidInput) || ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("%w: tokenize: %v", llm.ErrInvalidInput, err)
	}
	return tokens, nil
}

// specialEnds are the special tokens the tokenizer adds before a text ([CLS], BOS) and after
// it ([SEP]), found by tokenizing a probe with and without them.
func (e *Engine) specialEnds(ctx context.Context) (lead, trail []int) {
	s := e.embeds
	s.endsOnce.Do(func() {
		with, err1 := e.Tokenize(ctx, "a", true, false)
		plain, err2 := e.Tokenize(ctx, "a", false, false)
		if err1 != nil || err2 != nil || len(plain) == 0 {
			return
		}
		for at := 0; at+len(plain) <= len(with); at++ {
			if slices.Equal(with[at:at+len(plain)], plain) {
				s.lead, s.trail = with[:at], with[at+len(plain):]
				return
			}
		}
	})
	return s.lead, s.trail
}

// embedLoop owns the llama.cpp context of an embedding model.
func (e *Engine) embedLoop() {
	defer close(e.done)
	s := e.embeds
	for {
		if len(s.queue) == 0 {
			select {
			case j := <-s.submit:
				s.queue = append(s.queue, j)
			case reply := <-e.snapshots:
				reply <- e.snapshot()
				continue
			case <-e.quit:
				return
			}
		}
		if !e.drainEmbeds() {
			e.endEmbeds(fmt.Errorf("%w: %v", llm.ErrEngineFailure, errShutdown))
			return
		}
		if e.failure != nil {
			e.endEmbeds(e.failure)
			continue
		}
		e.embedTick()
	}
}

// drainEmbeds takes every submission waiting right now; it reports false when closing.
func (e *Engine) drainEmbeds() bool {
	for {
		select {
		case j := <-e.embeds.submit:
			e.embeds.queue = append(e.embeds.queue, j)
		case reply := <-e.snapshots:
			reply <- e.snapshot()
		case <-e.quit:
			return false
		default:
			return true
		}
	}
}

// endEmbeds ends every queued job with err.
func (e *Engine) endEmbeds(err error) {
	for _, j := range e.embeds.queue {
		j.done <- err
	}
	e.embeds.queue = nil
}

// embedTick embeds one sequence of the first queued job, then moves that job to the back of
// the queue, so that requests take turns.
func (e *Engine) embedTick() {
	s := e.embeds
	kept := s.queue[:0]
	for _, j := range s.queue {
		if err := j.ctx.Err(); err != nil {
			j.done <- err
			continue
		}
		kept = append(kept, j)
	}
	s.queue = kept
	if len(s.queue) == 0 {
		return
	}
	j := s.queue[0]
	seq := j.seqs[j.next]
	e.batch.Clear()
	for pos, t := range seq {
		e.batch.Add(t, nil, pos, true, 0)
	}
	began := time.Now()
	if err := e.decode(e.batch); err != nil {
		if fatalDecode(err) {
			e.fail(fmt.Errorf("%w: llama_decode: %v; the worker exits and the next request starts a new one", llm.ErrEngineFailure, err))
			e.endEmbeds(e.failure)
			return
		}
		e.lctx.KvCacheClear()
		s.queue = s.queue[1:]
		j.done <- fmt.Errorf("%w: llama_decode: %v", llm.ErrEngineFailure, err)
		return
	}
	e.stats.observe(0, 0, len(seq), e.batchSize, time.Since(began))
	v, err := e.pooled(len(seq))
	e.lctx.KvCacheClear() // a no-op without a KV cache (BERT)
	s.queue = s.queue[1:]
	if err != nil {
		j.done <- err
		return
	}
	e.stats.promptTokens += len(seq)
	j.vectors[j.next] = v
	j.next++
	if j.next < len(j.seqs) {
		s.queue = append(s.queue, j)
		return
	}
	e.stats.requests++
	j.done <- nil
}

// pooled is the vector of the n-token sequence just decoded: llama.cpp's pooling, or (pooling
// none) the mean of its token vectors.
func (e *Engine) pooled(n int) ([]float32, error) {
	s := e.embeds
	var v []float32
	if s.pooling != gguf.PoolingNone {
		v = seqVector(e.lctx, 0, s.length)
	} else {
		v = make([]float32, s.length)
		for row := range n {
			tok := e.lctx.GetEmbeddingsIth(row)
			if len(tok) < len(v) {
				return nil, fmt.Errorf("%w: llama.cpp returned no token vector for row %d", llm.ErrEngineFailure, row)
			}
			for i := range v {
				v[i] += tok[i]
			}
		}
		for i := range v {
			v[i] /= float32(n)
		}
	}
	if len(v) != s.length {
		return nil, fmt.Errorf("%w: llama.cpp returned no pooled vector", llm.ErrEngineFailure)
	}
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("%w: the model produced a vector that is not finite (NaN or Inf)", llm.ErrEngineFailure)
		}
	}
	return v, nil
}
