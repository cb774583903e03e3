package core

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/superfluid/superfluid/runtime/llm"
)

// Embeddings and rerank run on models whose GGUF says they embed (llm.Embedding): the
// engine pools each input into one vector, which the core passes on as it is (a dialect may
// normalize, as Ollama's /api/embed does). Such a model serves nothing else: a generation on
// it, and an embedding on a generation model, are llm.ErrUnsupportedModel. Rerank uses the
// model's rank head (a reranker: one score per query-document pair) when it has one, and
// otherwise the cosine similarity of the query's and each document's embedding.

// EmbedRequest is a batch of inputs to embed, as any dialect describes it.
type EmbedRequest struct {
	ID       string
	Endpoint string
	Model    string
	// Inputs are texts or token ids (llm.EmbedInput).
	Inputs []llm.EmbedInput
	// Truncate cuts inputs longer than the window instead of refusing them.
	Truncate bool
	// Dimensions, when > 0, is the vector size the client expects: a model whose vectors
	// have another size refuses the request (DimensionsError).
	Dimensions int
	// KeepAlive: see ChatRequest.
	KeepAlive *time.Duration
}

// EmbedResult holds one vector per input, in order.
type EmbedResult struct {
	Model   *Model
	Vectors [][]float32
	// PromptTokens counts the tokens of every input, as embedded (after any truncation).
	PromptTokens int
}

// DimensionsError refuses a request for vectors of a size the model does not make.
type DimensionsError struct {
	Asked, Length int
	Model         string
}

func (e *DimensionsError) Error() string {
	return fmt.Sprintf("dimensions %d: the model %s makes vectors of %d dimensions and cannot shorten them; leave dimensions out or give %d",
		e.Asked, e.Model, e.Length, e.Length)
}

// Unwrap lets errors.Is(err, llm.ErrInvalidInput) match.
func (e *DimensionsError) Unwrap() error { return llm.ErrInvalidInput }

// Embedding is what m embeds: its engine's view once loaded, else its GGUF's; nil for a
// generation-only model.
func (m *Model) Embedding() *llm.Embedding {
	if emb := m.Engine.Info().Embedding; emb != nil {
		return emb
	}
	return m.EmbeddingFacts
}

// checkGenerates refuses a generation on an embedding model.
func checkGenerates(m *Model) error {
	if m.Embedding() == nil {
		return nil
	}
	return fmt.Errorf("%w: the model %s is an embedding model; it serves embeddings and rerank (/v1/embeddings, /v1/rerank, /api/embed), not chat or completions",
		llm.ErrUnsupportedModel, m.ID)
}

// Embed embeds req's inputs on its model. Every request is recorded.
func (s *Service) Embed(ctx context.Context, req *EmbedRequest) (*EmbedResult, error) {
	var res *EmbedResult
	err := s.embeddingCall(ctx, recordKey{req.ID, req.Endpoint, req.Model, false}, func(ctx context.Context, m *Model) (int, error) {
		var err error
		if res, err = s.embed(ctx, m, req); res != nil {
			return res.PromptTokens, err
		}
		return 0, err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// embeddingCall resolves the model, runs one embedding-model call and records it with the
// prompt tokens run reports.
func (s *Service) embeddingCall(ctx context.Context, key recordKey, run func(context.Context, *Model) (int, error)) error {
	_, err := s.serve(ctx, key, func(ctx context.Context, m *Model) (*Result, error) {
		tokens, err := run(ctx, m)
		return embedRecord(m, tokens), err
	})
	return err
}

func (s *Service) embed(ctx context.Context, m *Model, req *EmbedRequest) (*EmbedResult, error) {
	emb := m.Embedding()
	switch {
	case emb == nil:
		return nil, fmt.Errorf("%w: the model %s is a generation model; it does not embed (embeddings need a model whose GGUF has a pooling type, such as a BERT embedding model)",
			llm.ErrUnsupportedModel, m.ID)
	case emb.Rank():
		return nil, fmt.Errorf("%w: the model %s is a reranker: it scores query-document pairs (/v1/rerank) and makes no embeddings",
			llm.ErrUnsupportedModel, m.ID)
	case len(req.Inputs) == 0:
		return nil, fmt.Errorf("%w: nothing to embed; give at least one input", llm.ErrInvalidInput)
	case req.Dimensions > 0 && emb.Length > 0 && req.Dimensions != emb.Length:
		return nil, &DimensionsError{Asked: req.Dimensions, Length: emb.Length, Model: m.ID}
	}
	inputs, err := s.fitInputs(m, req.Inputs, req.Truncate)
	if err != nil {
		return nil, err
	}
	fitted := *req
	fitted.Inputs = inputs
	r, err := s.runEmbed(ctx, m, &fitted)
	if err != nil {
		return nil, err
	}
	if n := len(r.Vectors[0]); req.Dimensions > 0 && n != req.Dimensions {
		return nil, &DimensionsError{Asked: req.Dimensions, Length: n, Model: m.ID}
	}
	return &EmbedResult{Model: m, Vectors: r.Vectors, PromptTokens: r.PromptTokens()}, nil
}

// fitInputs refuses (or, truncating, cuts) texts too long for m's window by their length
// alone, before the worker tokenizes them (see limits.go).
func (s *Service) fitInputs(m *Model, inputs []llm.EmbedInput, truncate bool) ([]llm.EmbedInput, error) {
	limit := maxPromptBytes(m.Info())
	if limit == 0 {
		return inputs, nil
	}
	out, cloned := inputs, false
	for i, in := range inputs {
		n := len(in.Text) + len(in.Pair)
		if n <= limit {
			continue
		}
		if !truncate {
			return nil, checkTextLength(m, n)
		}
		if !cloned {
			out, cloned = slices.Clone(inputs), true // the caller's inputs stay as they were
		}
		// The cut text still fills the window, which the engine then truncates by tokens.
		out[i].Text = cutText(in.Text, limit)
		out[i].Pair = cutText(in.Pair, max(0, limit-len(out[i].Text)))
	}
	return out, nil
}

// cutText is the longest prefix of s of at most n bytes that ends on a character boundary.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// runEmbed runs an embedding request on m's engine, loading it when needed, on the road m's
// requests take.
func (s *Service) runEmbed(ctx context.Context, m *Model, req *EmbedRequest) (*llm.EmbedResult, error) {
	release, err := s.admit(m, 1)
	if err != nil {
		return nil, err
	}
	defer release()
	engine := m.Engine
	if a, ok := engine.(acquirer); ok {
		acquired, done, err := a.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		defer done(req.KeepAlive)
		engine = acquired
	}
	r, err := s.roadOf(m).embed(ctx, engine, m, req)
	if err != nil {
		return nil, err
	}
	if len(r.Vectors) != len(req.Inputs) {
		return nil, fmt.Errorf("%w: the engine returned %d vectors for %d inputs", llm.ErrEngineFailure, len(r.Vectors), len(req.Inputs))
	}
	return r, nil
}

// embedRecord is what the request record keeps of an embedding or rerank request.
func embedRecord(m *Model, promptTokens int) *Result {
	if m == nil {
		return nil
	}
	return &Result{Model: m, Choices: []llm.Done{{Usage: llm.Usage{PromptTokens: promptTokens}}}}
}

// RerankRequest asks how relevant each document is to the query.
type RerankRequest struct {
	ID        string
	Endpoint  string
	Model     string
	Query     string
	Documents []string
	// TopN keeps the N most relevant documents; 0 keeps them all.
	TopN int
	// Truncate cuts a query or document longer than the window instead of refusing it.
	Truncate  bool
	KeepAlive *time.Duration
}

// RerankResult lists documents by relevance, most relevant first.
type RerankResult struct {
	Model   *Model
	Results []Ranked
	// PromptTokens counts every token the model read (the query once per pair, for a
	// reranker).
	PromptTokens int
}

// Ranked is one document's place: its index in the request and its relevance score (a
// reranker's score, or the cosine similarity of the embeddings, in [-1, 1]).
type Ranked struct {
	Index int
	Score float64
}

// Rerank scores req's documents against its query and sorts them, most relevant first.
// Every request is recorded.
func (s *Service) Rerank(ctx context.Context, req *RerankRequest) (*RerankResult, error) {
	var res *RerankResult
	err := s.embeddingCall(ctx, recordKey{req.ID, req.Endpoint, req.Model, false}, func(ctx context.Context, m *Model) (int, error) {
		var err error
		if res, err = s.rerank(ctx, m, req); res != nil {
			return res.PromptTokens, err
		}
		return 0, err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (s *Service) rerank(ctx context.Context, m *Model, req *RerankRequest) (*RerankResult, error) {
	emb := m.Embedding()
	switch {
	case emb == nil:
		return nil, fmt.Errorf("%w: the model %s is a generation model; rerank needs a reranker or an embedding model", llm.ErrUnsupportedModel, m.ID)
	case req.Query == "":
		return nil, fmt.Errorf("%w: query is empty; give the text to rank the documents against", llm.ErrInvalidInput)
	case len(req.Documents) == 0:
		return nil, fmt.Errorf("%w: documents is empty; give at least one document to rank", llm.ErrInvalidInput)
	case req.TopN < 0:
		return nil, fmt.Errorf("%w: top_n %d is negative; give the number of results to keep, or leave it out for all", llm.ErrInvalidInput, req.TopN)
	}
	var inputs []llm.EmbedInput
	if emb.Rank() {
		for _, doc := range req.Documents {
			inputs = append(inputs, llm.EmbedInput{Text: req.Query, Pair: doc})
		}
	} else {
		inputs = append(inputs, llm.EmbedInput{Text: req.Query})
		for _, doc := range req.Documents {
			inputs = append(inputs, llm.EmbedInput{Text: doc})
		}
	}
	inputs, err := s.fitInputs(m, inputs, req.Truncate)
	if err != nil {
		return nil, err
	}
	r, err := s.runEmbed(ctx, m, &EmbedRequest{ID: req.ID, Endpoint: req.Endpoint, Model: req.Model, Inputs: inputs, Truncate: req.Truncate, KeepAlive: req.KeepAlive})
	if err != nil {
		return nil, err
	}
	res := &RerankResult{Model: m, PromptTokens: r.PromptTokens()}
	for i := range req.Documents {
		var score float64
		if emb.Rank() {
			if len(r.Vectors[i]) == 0 {
				return nil, fmt.Errorf("%w: the reranker returned no score", llm.ErrEngineFailure)
			}
			score = float64(r.Vectors[i][0])
		} else {
			score = cosine(r.Vectors[0], r.Vectors[i+1])
		}
		res.Results = append(res.Results, Ranked{Index: i, Score: score})
	}
	slices.SortStableFunc(res.Results, func(a, b Ranked) int { return cmp.Compare(b.Score, a.Score) })
	if req.TopN > 0 && req.TopN < len(res.Results) {
		res.Results = res.Results[:req.TopN]
	}
	return res, nil
}

// cosine is the cosine similarity of a and b; 0 when either is all zeros.
func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range min(len(a), len(b)) {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}
