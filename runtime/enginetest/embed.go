package enginetest

import (
	"context"
	"fmt"
	"strings"

	"github.com/superfluid/superfluid/runtime/llm"
)

// NewEmbedder returns a fake embedding model with a window of ctx tokens. With pooling
// llm.PoolingRank it is a reranker (one score per pair); otherwise its vectors have dims
// floats. It refuses generation, as a real embedding model does.
//
// A vector is a bag of bytes: element i counts the input's tokens t with t % dims == i, so
// equal inputs give equal vectors and texts sharing bytes point the same way (cosine
// similarity means something). A rank score is the share of the pair's words found in its
// query, so a document about the query outranks one that is not.
func NewEmbedder(ctx, dims int, pooling string) *Engine {
	e := New(ctx, "")
	e.info.Architecture = "fake-bert"
	e.info.Embedding = &llm.Embedding{Pooling: pooling, Length: dims}
	if pooling == llm.PoolingRank {
		e.info.Embedding.Length = 1
	}
	return e
}

// Embed returns the fake's vectors; it refuses what the real engine refuses (no inputs,
// token ids outside the vocabulary, inputs past the window unless truncated, a model that
// does not embed).
func (e *Engine) Embed(ctx context.Context, req *llm.EmbedRequest) (*llm.EmbedResult, error) {
	emb := e.info.Embedding
	if emb == nil {
		return nil, fmt.Errorf("%w: %s is a generation model; it does not embed", llm.ErrUnsupportedModel, e.info.Path)
	}
	if len(req.Inputs) == 0 {
		return nil, fmt.Errorf("%w: nothing to embed; give at least one input", llm.ErrInvalidInput)
	}
	e.mu.Lock()
	e.embeds = append(e.embeds, *req)
	e.mu.Unlock()
	res := &llm.EmbedResult{}
	for i, in := range req.Inputs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		tokens := in.Tokens
		if len(tokens) == 0 {
			tokens, _ = e.Tokenize(ctx, in.Text, true, false)
			if in.Pair != "" {
				pair, _ := e.Tokenize(ctx, in.Pair, false, false) // the pair's BOS dropped
				tokens = append(tokens, pair...)
			}
		}
		for _, t := range tokens {
			if t < 0 || t >= e.info.VocabSize {
				return nil, fmt.Errorf("input %d: %w: token id %d is outside the vocabulary (0-%d)", i, llm.ErrInvalidInput, t, e.info.VocabSize-1)
			}
		}
		if len(tokens) > e.info.ContextLength {
			if !req.Truncate {
				return nil, &llm.ContextLengthError{PromptTokens: len(tokens), ContextLength: e.info.ContextLength}
			}
			tokens = tokens[:e.info.ContextLength]
		}
		var v []float32
		if emb.Rank() {
			v = []float32{overlap(in.Text, in.Pair)}
		} else {
			v = make([]float32, emb.Length)
			for _, t := range tokens {
				v[t%emb.Length]++
			}
		}
		res.Vectors = append(res.Vectors, v)
		res.Tokens = append(res.Tokens, len(tokens))
	}
	return res, nil
}

// EmbedRequests returns the requests Embed has seen.
func (e *Engine) EmbedRequests() []llm.EmbedRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]llm.EmbedRequest(nil), e.embeds...)
}

// overlap is the share of doc's words that are in query, in [0, 1].
func overlap(query, doc string) float32 {
	words := strings.Fields(strings.ToLower(doc))
	if len(words) == 0 {
		return 0
	}
	q := map[string]bool{}
	for _, w := range strings.Fields(strings.ToLower(query)) {
		q[w] = true
	}
	n := 0
	for _, w := range words {
		if q[w] {
			n++
		}
	}
	return float32(n) / float32(len(words))
}
