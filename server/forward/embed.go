package forward

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

// Embed sends req's inputs to the upstream's /v1/embeddings and returns its vectors in input
// order. The upstream counts the tokens of all inputs together; each input is given its share,
// the remainder on the last, so the total is exact. A rerank (pairs) is refused: OpenAI's API
// has no pairs.
func (e *Engine) Embed(ctx context.Context, req *core.EmbedRequest) (*llm.EmbedResult, error) {
	inputs := make([]any, len(req.Inputs))
	for i, in := range req.Inputs {
		if in.Pair != "" {
			return nil, fmt.Errorf("%w: a forwarded model does not rank pairs", llm.ErrInvalidInput)
		}
		inputs[i] = in.Text
		if len(in.Tokens) > 0 {
			inputs[i] = in.Tokens
		}
	}
	body := map[string]any{"model": e.cfg.Model, "input": inputs, "encoding_format": "float"}
	if req.Dimensions > 0 {
		body["dimensions"] = req.Dimensions
	}
	// One JSON reply, sent when the work is done: the header timeout bounds it all.
	ctx, cancel := context.WithTimeoutCause(ctx, e.cfg.HeaderTimeout, broken(e.base, fmt.Sprintf("did not answer within %s", e.cfg.HeaderTimeout)))
	defer cancel()
	resp, err := e.post(ctx, "/embeddings", body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var wire struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 256<<20)).Decode(&wire); err != nil {
		if cause := context.Cause(ctx); cause != nil {
			return nil, cause
		}
		return nil, broken(e.base, fmt.Sprintf("sent malformed embeddings: %v", err))
	}
	r := &llm.EmbedResult{Vectors: make([][]float32, len(inputs)), Tokens: make([]int, len(inputs))}
	for _, d := range wire.Data {
		if d.Index < 0 || d.Index >= len(inputs) || r.Vectors[d.Index] != nil {
			return nil, broken(e.base, fmt.Sprintf("sent an embedding for input %d of %d", d.Index, len(inputs)))
		}
		r.Vectors[d.Index] = d.Embedding
	}
	for i, v := range r.Vectors {
		if v == nil {
			return nil, broken(e.base, fmt.Sprintf("sent no embedding for input %d", i))
		}
		r.Tokens[i] = wire.Usage.PromptTokens / len(inputs)
	}
	if n := len(inputs); n > 0 {
		r.Tokens[n-1] += wire.Usage.PromptTokens % n
	}
	return r, nil
}
