package ollama

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

// Embeddings, as Ollama 0.24.0 serves them (server/routes.go EmbedHandler and
// EmbeddingsHandler), on models whose GGUF says they embed:
//
//   - /api/embed takes input as a string or an array of strings (anything else is Ollama's
//     400 "invalid input type"); an empty string, an empty array or no input loads the model
//     (keep_alive 0 unloads it) and answers "embeddings": []. Each vector is L2-normalized, as
//     Ollama does; dimensions below the model's size keeps that many leading values and
//     normalizes again, and any other value is ignored. truncate (default true) cuts an input
//     longer than the window to fit; truncate false makes it a 400. The reply has model (as
//     sent), embeddings, total_duration, load_duration and prompt_eval_count.
//   - /api/embeddings (the legacy route) takes one prompt and answers "embedding" with the
//     engine's vector as it is, not normalized, as Ollama's handler does; an empty prompt
//     loads the model and answers "embedding": []. A prompt longer than the window is a 400
//     (Ollama answers 500).
//   - options are accepted and ignored (the window is fixed when the model loads).
//   - A generation-only model is a 400 "does not support embeddings".

type embedRequest struct {
	Model      string          `json:"model"`
	Input      json.RawMessage `json:"input"`
	Truncate   *bool           `json:"truncate"`
	Dimensions int             `json:"dimensions"`
	KeepAlive  json.RawMessage `json:"keep_alive"`
	Options    map[string]any  `json:"options"`
}

type embedResponse struct {
	Model           string        `json:"model"`
	Embeddings      [][]float32   `json:"embeddings"`
	TotalDuration   time.Duration `json:"total_duration,omitempty"`
	LoadDuration    time.Duration `json:"load_duration,omitempty"`
	PromptEvalCount int           `json:"prompt_eval_count,omitempty"`
}

type embeddingsRequest struct {
	Model     string          `json:"model"`
	Prompt    string          `json:"prompt"`
	KeepAlive json.RawMessage `json:"keep_alive"`
	Options   map[string]any  `json:"options"`
}

type embeddingsResponse struct {
	Embedding []float64 `json:"embedding"`
}

func (h *handlers) routesEmbed(r gin.IRouter) {
	r.POST("/api/embed", Handle(h.embed))
	r.POST("/api/embeddings", Handle(h.embeddings))
}

// embedModel resolves a model that embeds; a generation model is Ollama's capability 400.
func (h *handlers) embedModel(ctx context.Context, name string) (*core.Model, error) {
	m, err := h.servedModel(ctx, name)
	if err != nil {
		return nil, err
	}
	if m.Embedding() == nil {
		return nil, unsupported(name, "embeddings", "it is a generation model; serve an embedding model (a GGUF with a pooling type, such as a BERT embedding model) to use /api/embed")
	}
	return m, nil
}

func (h *handlers) embed(c *gin.Context) error {
	start := time.Now()
	var req embedRequest
	if err := decode(c.Request, &req); err != nil {
		return err
	}
	texts, err := embedInputs(req.Input)
	if err != nil {
		return err
	}
	ka, err := keepAlive(req.KeepAlive)
	if err != nil {
		return err
	}
	ctx := c.Request.Context()
	m, err := h.embedModel(ctx, req.Model)
	if err != nil {
		return err
	}
	if err := h.svc.CheckKeepAlive(ctx, ka); err != nil {
		return err
	}
	if len(texts) == 0 {
		if _, err := h.loadOnly(ctx, m, ka, false); err != nil {
			return err
		}
		c.JSON(http.StatusOK, embedResponse{Model: req.Model, Embeddings: [][]float32{}})
		return nil
	}
	// Loaded on demand as any request (a failed load's backoff holds) and held for the reply,
	// timed for load_duration.
	release, err := h.hold(ctx, m)
	if err != nil {
		return err
	}
	defer release(ka)
	loaded := time.Now()
	creq := &core.EmbedRequest{ID: newID(), Endpoint: "/api/embed", Model: m.ID, Truncate: req.Truncate == nil || *req.Truncate, KeepAlive: ka}
	for _, text := range texts {
		creq.Inputs = append(creq.Inputs, llm.EmbedInput{Text: text})
	}
	res, err := h.svc.Embed(ctx, creq)
	if err != nil {
		return err
	}
	for i, v := range res.Vectors {
		if err := normalize(v); err != nil {
			return err
		}
		if req.Dimensions > 0 && req.Dimensions < len(v) {
			v = v[:req.Dimensions]
			if err := normalize(v); err != nil {
				return err
			}
		}
		res.Vectors[i] = v
	}
	c.JSON(http.StatusOK, embedResponse{Model: req.Model, Embeddings: res.Vectors, TotalDuration: time.Since(start),
		LoadDuration: loaded.Sub(start), PromptEvalCount: res.PromptTokens})
	return nil
}

// embedInputs reads /api/embed's input: a string (none when empty) or an array of strings.
func embedInputs(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, badRequest("invalid input type: give input as a string or an array of strings")
	}
	return many, nil
}

func (h *handlers) embeddings(c *gin.Context) error {
	var req embeddingsRequest
	if err := decode(c.Request, &req); err != nil {
		return err
	}
	ka, err := keepAlive(req.KeepAlive)
	if err != nil {
		return err
	}
	ctx := c.Request.Context()
	m, err := h.embedModel(ctx, req.Model)
	if err != nil {
		return err
	}
	if err := h.svc.CheckKeepAlive(ctx, ka); err != nil {
		return err
	}
	if req.Prompt == "" {
		if _, err := h.loadOnly(ctx, m, ka, false); err != nil {
			return err
		}
		c.JSON(http.StatusOK, embeddingsResponse{Embedding: []float64{}})
		return nil
	}
	res, err := h.svc.Embed(ctx, &core.EmbedRequest{ID: newID(), Endpoint: "/api/embeddings", Model: m.ID,
		Inputs: []llm.EmbedInput{{Text: req.Prompt}}, KeepAlive: ka})
	if err != nil {
		return err
	}
	out := embeddingsResponse{Embedding: make([]float64, len(res.Vectors[0]))}
	for i, x := range res.Vectors[0] {
		out.Embedding[i] = float64(x)
	}
	c.JSON(http.StatusOK, out)
	return nil
}

// normalize scales v to unit length in place, exactly as Ollama's normalize does (the sum of
// squares in float32; a zero vector stays zero); a value that is not finite is an error.
func normalize(v []float32) error {
	var sum float32
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return errors.New("embedding contains NaN or Inf values")
		}
		sum += x * x
	}
	norm := float32(1.0 / max(math.Sqrt(float64(sum)), 1e-12))
	for i := range v {
		v[i] *= norm
	}
	return nil
}
