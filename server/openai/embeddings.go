package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

// Embeddings: POST /v1/embeddings in OpenAI's shapes, for models whose GGUF says they embed.
// input is a string, an array of strings, an array of token ids or an array of arrays of
// token ids, as OpenAI takes it: not empty, no empty string or token array, at most
// maxEmbeddingInputs items. Texts get the model's special tokens ([CLS] ... [SEP]); token ids
// are embedded as they are. An input longer than the model's window is a 400
// context_length_exceeded (OpenAI does not truncate). Vectors are the engine's pooling, not
// normalized; encoding_format "base64" sends each as the base64 of its little-endian float32
// bytes. dimensions is refused (400, param dimensions) unless it is the model's own size: a
// model cannot shorten its vectors. A generation-only model is a 400 unsupported_model.

// maxEmbeddingInputs is OpenAI's bound on the items of one input array.
const maxEmbeddingInputs = 2048

// routesEmbeddings registers /v1/embeddings and /v1/rerank.
func (h *handlers) routesEmbeddings(r gin.IRouter) {
	r.POST("/v1/embeddings", Handle(h.embeddings))
	r.POST("/v1/rerank", Handle(h.rerank))
}

type embeddingRequest struct {
	Model          *string         `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat *string         `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
	User           *string         `json:"user"`
}

type embeddingResponse struct {
	Object string           `json:"object"`
	Data   []embeddingDatum `json:"data"`
	Model  string           `json:"model"`
	Usage  embeddingUsage   `json:"usage"`
}

// embeddingDatum is one vector; Embedding is a []float32 or a base64 string.
type embeddingDatum struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

type embeddingUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

func (h *handlers) embeddings(c *gin.Context) error {
	var req embeddingRequest
	if err := decode(c.Request, &req); err != nil {
		return err
	}
	if needsModel(&req.Model, h.svc.ModelOptional()) {
		return invalid("model", "you must provide a model parameter")
	}
	inputs, err := embeddingInputs(req.Input)
	if err != nil {
		return err
	}
	format := "float"
	if req.EncodingFormat != nil {
		format = *req.EncodingFormat
	}
	if format != "float" && format != "base64" {
		return invalid("encoding_format", fmt.Sprintf("encoding_format %q is not supported; use \"float\" or \"base64\"", format))
	}
	creq := &core.EmbedRequest{ID: newID("embd-"), Endpoint: "/v1/embeddings", Model: *req.Model, Inputs: inputs}
	if req.Dimensions != nil {
		if *req.Dimensions < 1 {
			return invalid("dimensions", fmt.Sprintf("dimensions %d is less than 1; give the model's vector size or leave it out", *req.Dimensions))
		}
		creq.Dimensions = *req.Dimensions
	}
	res, err := h.svc.Embed(c.Request.Context(), creq)
	if err != nil {
		return embedError(err)
	}
	out := embeddingResponse{Object: "list", Model: *req.Model, Data: make([]embeddingDatum, len(res.Vectors)),
		Usage: embeddingUsage{PromptTokens: res.PromptTokens, TotalTokens: res.PromptTokens}}
	for i, v := range res.Vectors {
		d := embeddingDatum{Object: "embedding", Index: i, Embedding: v}
		if format == "base64" {
			d.Embedding = base64Vector(v)
		}
		out.Data[i] = d
	}
	c.JSON(http.StatusOK, out)
	return nil
}

// embeddingInputs decodes OpenAI's input union into engine inputs.
func embeddingInputs(raw json.RawMessage) ([]llm.EmbedInput, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, invalid("input", "you must provide the input to embed: a string, an array of strings, an array of token ids or an array of arrays of token ids")
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		if text == "" {
			return nil, invalid("input", "input cannot be an empty string")
		}
		return []llm.EmbedInput{{Text: text}}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, invalid("input", "input must be a string, an array of strings, an array of token ids or an array of arrays of token ids")
	}
	switch {
	case len(items) == 0:
		return nil, invalid("input", "input cannot be an empty array")
	case len(items) > maxEmbeddingInputs:
		return nil, invalid("input", fmt.Sprintf("input has %d items; an array may hold at most %d: send the rest in further requests", len(items), maxEmbeddingInputs))
	}
	// An array of token ids is one input; any other array is one input per item.
	if ids, err := tokenIDs(raw); err == nil {
		return []llm.EmbedInput{{Tokens: ids}}, nil
	}
	inputs := make([]llm.EmbedInput, len(items))
	texts := 0
	for i, item := range items {
		var s string
		if json.Unmarshal(item, &s) == nil {
			if s == "" {
				return nil, invalid("input", fmt.Sprintf("input[%d] is an empty string; every input needs text", i))
			}
			inputs[i].Text = s
			texts++
			continue
		}
		ids, err := tokenIDs(item)
		if err != nil {
			return nil, invalid("input", fmt.Sprintf("input[%d]: %v", i, err))
		}
		if len(ids) == 0 {
			return nil, invalid("input", fmt.Sprintf("input[%d] is an empty array of token ids", i))
		}
		inputs[i].Tokens = ids
	}
	if texts > 0 && texts < len(inputs) {
		return nil, invalid("input", "input mixes strings and token arrays; send one kind per request")
	}
	return inputs, nil
}

// tokenIDs decodes a JSON array of non-negative integers.
func tokenIDs(raw json.RawMessage) ([]int, error) {
	var nums []json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&nums); err != nil {
		return nil, errors.New("an item must be a string or an array of token ids (integers)")
	}
	ids := make([]int, len(nums))
	for i, n := range nums {
		v, err := n.Int64()
		if err != nil || v < 0 || v > math.MaxInt32 {
			return nil, fmt.Errorf("token id %s is not a non-negative integer", n)
		}
		ids[i] = int(v)
	}
	return ids, nil
}

// base64Vector is OpenAI's base64 encoding: the little-endian float32 bytes.
func base64Vector(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// embedError names the parameter at fault in an embedding or rerank error.
func embedError(err error) error {
	var de *core.DimensionsError
	var cl *llm.ContextLengthError
	switch {
	case errors.As(err, &de):
		return invalid("dimensions", err.Error())
	case errors.As(err, &cl):
		size := fmt.Sprintf("%d tokens", cl.PromptTokens)
		if cl.Bytes > 0 {
			size = fmt.Sprintf("%d bytes, at least %d tokens,", cl.Bytes, cl.PromptTokens)
		}
		return &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "context_length_exceeded", Param: "input",
			Message: fmt.Sprintf("an input is %s but the model's window is %d tokens; shorten it or split it across inputs", size, cl.ContextLength)}
	case errors.Is(err, llm.ErrUnsupportedModel):
		return unsupportedModel(err)
	case errors.Is(err, llm.ErrInvalidInput):
		return invalid("input", err.Error())
	}
	return err
}

// unsupportedModel is the spec's 400 unsupported_model.
func unsupportedModel(err error) *Error {
	return &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "unsupported_model", Param: "model", Message: err.Error()}
}
