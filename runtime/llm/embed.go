package llm

import (
	"context"
	"fmt"
)

// ErrUnsupportedModel refuses a request the model does not serve: embeddings or rerank on a
// generation-only model, a generation on an embedding-only one. It matches ErrInvalidInput
// too, so a caller that knows only that sentinel still answers 400.
var ErrUnsupportedModel = fmt.Errorf("%w: the model does not serve this request", ErrInvalidInput)

// Embedder is implemented by engines that can embed. An engine whose model does not embed
// (Info().Embedding is nil) refuses with ErrUnsupportedModel.
type Embedder interface {
	// Embed returns one vector per input, in order, as the model pools them (not normalized).
	// A model with a rank head (Embedding.Rank) returns each input's scores instead.
	Embed(ctx context.Context, req *EmbedRequest) (*EmbedResult, error)
}

// Embedding says that a model embeds and what it returns. ModelInfo.Embedding is nil for a
// generation-only model.
type Embedding struct {
	// Pooling is how the engine makes one vector of a sequence's token vectors: "mean", "cls",
	// "last" or "rank" (a reranker's classification head: the "vector" is its scores).
	Pooling string `json:"pooling"`
	// Length is the size of the vectors (for a rank head, the number of scores, usually 1).
	Length int `json:"length"`
}

// Rank reports whether the model is a reranker: it scores sentence pairs rather than embeds.
func (e *Embedding) Rank() bool { return e != nil && e.Pooling == PoolingRank }

// Poolings, as llama.cpp names its pooling types.
const (
	PoolingMean = "mean"
	PoolingCLS  = "cls"
	PoolingLast = "last"
	PoolingRank = "rank"
)

// EmbedRequest is a batch of inputs for one model.
type EmbedRequest struct {
	// ID names the request in logs.
	ID     string       `json:"id,omitempty"`
	Inputs []EmbedInput `json:"inputs"`
	// Truncate cuts an input longer than the context window to fit (keeping the special
	// tokens the tokenizer adds at its end) instead of refusing it with a ContextLengthError.
	Truncate bool `json:"truncate,omitempty"`
}

// EmbedInput is one sequence to embed: Text (tokenized with the model's special tokens) or
// Tokens (taken as they are). Pair, for a reranker, is the second text of a sentence pair:
// the sequence is then Text's tokens followed by Pair's without its leading BOS ([CLS] query
// [SEP] document [SEP] for a BERT reranker).
type EmbedInput struct {
	Text   string `json:"text,omitempty"`
	Tokens []int  `json:"tokens,omitempty"`
	Pair   string `json:"pair,omitempty"`
}

// EmbedResult holds the vectors of an EmbedRequest, in input order.
type EmbedResult struct {
	Vectors [][]float32 `json:"vectors"`
	// Tokens is the length of each input as the model saw it (after any truncation).
	Tokens []int `json:"tokens"`
}

// PromptTokens is the number of tokens embedded, all inputs together.
func (r *EmbedResult) PromptTokens() int {
	n := 0
	for _, t := range r.Tokens {
		n += t
	}
	return n
}
