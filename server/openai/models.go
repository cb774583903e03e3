package openai

import (
	"cmp"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core"
)

// modelEntry is one /v1/models entry: OpenAI's fields plus what local clients need.
type modelEntry struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	Loaded  bool   `json:"loaded"`
	// The window the model serves with (its settings, else --ctx; the worker's once loaded)
	// under the names clients read it by: context_length (OpenRouter-style lists) and
	// max_model_len (vLLM). LM Studio's clients read max_context_length (the trained window)
	// and loaded_context_length (the window of a loaded model); llama-server's read
	// meta.n_ctx and meta.n_ctx_train.
	ContextLength       int            `json:"context_length"`
	MaxModelLen         int            `json:"max_model_len"`
	MaxContextLength    int            `json:"max_context_length"`
	LoadedContextLength int            `json:"loaded_context_length,omitempty"`
	Meta                modelMeta      `json:"meta"`
	Architecture        architecture   `json:"architecture"`
	Runtime             string         `json:"runtime"`
	Capabilities        map[string]any `json:"capabilities"`
	// State is unloaded, loading, loaded, unloading, failed or missing (the file is gone);
	// Error says why a failed or missing model cannot be used.
	State string `json:"state"`
	Error string `json:"error,omitempty"`
	// Source, Quantization and ParameterCount come from the catalog.
	Source         string `json:"source,omitempty"`
	Quantization   string `json:"quantization,omitempty"`
	ParameterCount int64  `json:"parameter_count,omitempty"`
	// ExpiresAt is when an idle loaded model unloads (keep-alive); absent when not scheduled.
	ExpiresAt *int64 `json:"expires_at,omitempty"`
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

// entry describes m the way /v1/models does. The file's absolute path is only for a caller
// trusted with it (an admin key; without keys, this machine and not a web page): others get
// its base name, which names the file without telling where the data lives.
func (h *handlers) entry(c *gin.Context, m *core.Model) modelEntry {
	e := entry(m)
	st := h.svc.ModelStatus(m)
	e.State, e.Loaded = st.State, st.State == core.ModelLoaded
	if e.Loaded { // as the manager sees it: a failed or unloading model serves no window now
		e.LoadedContextLength = e.ContextLength
	}
	if st.Err != nil {
		e.Error = st.Err.Error()
	}
	if !auth.Trusted(c.Request) {
		e.Meta.Path = filepath.Base(m.Path)
		e.Error = strings.ReplaceAll(e.Error, m.Path, e.Meta.Path) // a failed load quotes its file
	}
	if !st.ExpiresAt.IsZero() {
		at := st.ExpiresAt.Unix()
		e.ExpiresAt = &at
	}
	if m.Entry != nil {
		e.Source, e.Quantization, e.ParameterCount = m.Entry.Source, m.Entry.Quantization, m.Entry.ParameterCount
	}
	return e
}

// entry is what a model says about itself, without the manager's view.
func entry(m *core.Model) modelEntry {
	info := m.Info()
	runtime := info.Runtime
	if runtime == "" {
		runtime = "llamacpp-cpu"
	}
	return modelEntry{
		ID: m.ID, Object: "model", Created: m.Created.Unix(), OwnedBy: "superfluid", Loaded: m.Loaded(),
		ContextLength: info.ContextLength, MaxModelLen: info.ContextLength,
		MaxContextLength: cmp.Or(info.TrainContextLength, info.ContextLength),
		Meta: modelMeta{NCtx: info.ContextLength, NCtxTrain: info.TrainContextLength, NVocab: info.VocabSize,
			Size: m.Size, Arch: info.Architecture, Path: m.Path},
		Architecture: architecture{InputModalities: inputModalities(m), OutputModalities: []string{"text"}},
		Runtime:      runtime,
		Capabilities: capabilities(m),
	}
}

// inputModalities are what the model reads: text, and images and audio when its projector
// encodes them.
func inputModalities(m *core.Model) []string {
	in := []string{"text"}
	vision, audio := m.Modalities()
	if vision {
		in = append(in, "image")
	}
	if audio {
		in = append(in, "audio")
	}
	return in
}

// capabilities is the model's capability record with the dialect object.
func capabilities(m *core.Model) map[string]any {
	caps := m.Capabilities()
	vision, audio := m.Modalities()
	levels := []string{}
	if caps.ReasoningEffort {
		levels = []string{"low", "medium", "high"}
	}
	emb := m.Embedding() // an embedding model serves embeddings and rerank, nothing else
	return map[string]any{
		"completion": emb == nil, "chat": emb == nil, "embedding": emb != nil && !emb.Rank(), "rerank": emb != nil, "vision": vision, "audio": audio,
		"tools": caps.Tools, "native_tools": caps.NativeTools, "thinking": caps.Thinking,
		"dialect": map[string]any{
			"enable_thinking": caps.Thinking, "reasoning_effort": caps.ReasoningEffort, "reasoning_effort_levels": levels,
			"fim": m.FIM != nil, "fim_model": nil,
			"chat_template": !m.Template.IsFallback(),
		},
	}
}

func (h *handlers) listModels(c *gin.Context) error {
	if h.anthropicClient(c) {
		h.opts.AnthropicModels(c)
		return nil
	}
	entries := []modelEntry{}
	for _, m := range h.svc.VisibleModels(c.Request.Context()) { // a key limited to some models sees those
		entries = append(entries, h.entry(c, m))
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": entries})
	return nil
}

// anthropicClient reports whether /v1/models is answered in Anthropic's shape: one path
// serves both SDKs, and their list shapes differ (capabilities above all).
func (h *handlers) anthropicClient(c *gin.Context) bool {
	return h.opts.AnthropicModels != nil && h.opts.AnthropicModel != nil && h.opts.AnthropicClient != nil && h.opts.AnthropicClient(c.Request)
}

func (h *handlers) getModel(c *gin.Context) error {
	if h.anthropicClient(c) {
		h.opts.AnthropicModel(c)
		return nil
	}
	// The wildcard keeps ids with slashes (paths, "org/name") whole.
	name := strings.TrimPrefix(c.Param("model"), "/")
	if name == "" {
		return fmt.Errorf("%w: the model \"\" does not exist; GET /v1/models lists the models", llm.ErrModelNotFound)
	}
	m, err := h.svc.ModelFor(c.Request.Context(), name)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, h.entry(c, m))
	return nil
}

// adminOnly refuses model management to a key that is not an admin key (without keys: to
// other machines).
func adminOnly(c *gin.Context) error {
	ok, refusal := auth.Admin(c.Request)
	if ok {
		return nil
	}
	return &Error{Status: http.StatusForbidden, Type: "permission_error", Code: "admin_required", Message: refusal}
}

// modelRequest is the body of /v1/models/load and /v1/models/unload; runtime (load only) picks
// the runtime the model runs on from now on ("cpu", "vulkan", ...).
type modelRequest struct {
	Model   *string `json:"model"`
	Runtime *string `json:"runtime"`
}

func (h *handlers) modelRequest(c *gin.Context) (modelRequest, error) {
	var req modelRequest
	if err := decode(c.Request, &req); err != nil {
		return req, err
	}
	if req.Model == nil || *req.Model == "" {
		return req, invalid("model", "you must provide a model parameter")
	}
	return req, nil
}

// loadModel loads a model now (ignoring the backoff of failed loads) and describes it.
func (h *handlers) loadModel(c *gin.Context) error {
	if err := adminOnly(c); err != nil {
		return err
	}
	req, err := h.modelRequest(c)
	if err != nil {
		return err
	}
	// As the key sees the catalog: a model outside its scope is not loaded, and is a 404 like
	// a missing one.
	m, err := h.svc.ModelFor(c.Request.Context(), *req.Model)
	if err != nil {
		return err
	}
	if req.Runtime != nil {
		if err := h.setRuntime(c, m, *req.Runtime); err != nil {
			return err
		}
	}
	if m, err = h.svc.LoadModel(c.Request.Context(), m.ID); err != nil {
		return err
	}
	c.JSON(http.StatusOK, h.entry(c, m))
	return nil
}

// setRuntime keeps the model's other settings and changes its runtime.
func (h *handlers) setRuntime(c *gin.Context, m *core.Model, runtime string) error {
	if m.Entry == nil {
		return invalid("runtime", "this server serves a fixed set of models; their runtime cannot change")
	}
	set, err := h.svc.ModelSettings(c.Request.Context(), m.Entry.ID)
	if err != nil {
		return err
	}
	set.ModelID, set.Runtime = m.Entry.ID, runtime
	return h.svc.SetModelSettings(c.Request.Context(), set)
}

// unloadModel unloads a model after its requests in flight finish.
func (h *handlers) unloadModel(c *gin.Context) error {
	if err := adminOnly(c); err != nil {
		return err
	}
	req, err := h.modelRequest(c)
	if err != nil {
		return err
	}
	return h.unload(c, *req.Model)
}

// deleteModel is DELETE /v1/models/{model}: the spec's unload (the model stays in the catalog;
// superfluid rm and /api/delete remove it).
func (h *handlers) deleteModel(c *gin.Context) error {
	if err := adminOnly(c); err != nil {
		return err
	}
	return h.unload(c, strings.TrimPrefix(c.Param("model"), "/"))
}

func (h *handlers) unload(c *gin.Context, name string) error {
	m, err := h.svc.ModelFor(c.Request.Context(), name) // as the key sees the catalog
	if err != nil {
		return err
	}
	if m, err = h.svc.UnloadModel(c.Request.Context(), m.ID); err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"id": m.ID, "object": "model", "deleted": false, "unloaded": true, "state": h.svc.ModelStatus(m).State})
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
	} else if ms := h.svc.VisibleModels(c.Request.Context()); len(ms) == 1 {
		model = ms[0].ID // one model for this caller: model may be omitted, as with llama-server
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
