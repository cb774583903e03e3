package openai

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

// modelEntry is one /v1/models entry: OpenAI's fields plus what local clients need.
type modelEntry struct {
	ID           string         `json:"id"`
	Object       string         `json:"object"`
	Created      int64          `json:"created"`
	OwnedBy      string         `json:"owned_by"`
	Loaded       bool           `json:"loaded"`
	Meta         modelMeta      `json:"meta"`
	Architecture architecture   `json:"architecture"`
	Runtime      string         `json:"runtime"`
	Capabilities map[string]any `json:"capabilities"`
}

type modelMeta struct {
	NCtx      int    `json:"n_ctx"`
	NCtxTrain int    `json:"n_ctx_train,omitempty"`
	NVocab    int    `json:"n_vocab,omitempty"`
	Size      int64  `json:"size"`
	Arch      string `json:"architecture,omitempty"`
	Path      string `json:"path"`
}

type architecture struct {
	InputModalities  []string `json:"input_modalities"`
	OutputModalities []string `json:"output_modalities"`
}

// entry describes m the way /v1/models does; /props reuses it.
func entry(m *core.Model) modelEntry {
	info := m.Info()
	runtime := info.Runtime
	if runtime == "" {
		runtime = "llamacpp-cpu"
	}
	return modelEntry{
		ID: m.ID, Object: "model", Created: m.Created.Unix(), OwnedBy: "superfluid", Loaded: m.Loaded(),
		Meta: modelMeta{NCtx: info.ContextLength, NCtxTrain: info.TrainContextLength, NVocab: info.VocabSize,
			Size: m.Size, Arch: info.Architecture, Path: m.Path},
		Architecture: architecture{InputModalities: []string{"text"}, OutputModalities: []string{"text"}},
		Runtime:      runtime,
		Capabilities: capabilities(m),
	}
}

// capabilities is the model's capability record with the dialect object.
func capabilities(m *core.Model) map[string]any {
	return map[string]any{
		"completion": true, "chat": true, "embedding": false, "vision": false, "tools": false,
		"dialect": map[string]any{
			"enable_thinking": false, "reasoning_effort": false, "reasoning_effort_levels": []string{},
			"fim": false, "fim_model": nil,
			"chat_template": !m.Template.IsFallback(),
		},
	}
}

func (h *handlers) listModels(c *gin.Context) error {
	entries := []modelEntry{}
	for _, m := range h.svc.Models() {
		entries = append(entries, entry(m))
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": entries})
	return nil
}

func (h *handlers) getModel(c *gin.Context) error {
	// The wildcard keeps ids with slashes (paths, "org/name") whole.
	name := strings.TrimPrefix(c.Param("model"), "/")
	if name == "" {
		return fmt.Errorf("%w: the model \"\" does not exist; GET /v1/models lists the models", llm.ErrModelNotFound)
	}
	m, err := h.svc.Model(name)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, entry(m))
	return nil
}

type tokenizeRequest struct {
	Model      *string `json:"model"`
	Input      *string `json:"input"`
	Content    *string `json:"content"` // llama.cpp's name
	Text       *string `json:"text"`
	AddSpecial bool    `json:"add_special"`
}

func (h *handlers) tokenize(c *gin.Context) error {
	var req tokenizeRequest
	if err := decode(c.Request, &req); err != nil {
		return err
	}
	model := ""
	if req.Model != nil {
		model = *req.Model
	} else if ms := h.svc.Models(); len(ms) == 1 {
		model = ms[0].ID // one served model: model may be omitted, as with llama-server
	}
	if model == "" {
		return invalid("model", "you must provide a model parameter")
	}
	var text *string
	for _, t := range []*string{req.Input, req.Content, req.Text} {
		if t != nil {
			text = t
			break
		}
	}
	if text == nil {
		return invalid("input", "you must provide the text to tokenize in input (or content)")
	}
	tokens, err := h.svc.Tokenize(c.Request.Context(), model, *text, req.AddSpecial)
	if err != nil {
		return err
	}
	if tokens == nil {
		tokens = []int{} // an empty text: [], never null (the worker protocol drops empty lists)
	}
	c.JSON(http.StatusOK, gin.H{"model": model, "tokens": tokens, "count": len(tokens)})
	return nil
}
