package openai

import (
	"net/http"
	"path/filepath"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core"
)

// llama.cpp server routes, answered in OpenAI's error shape.
func (h *handlers) routesLlamaCpp(r gin.IRouter) {
	r.GET("/health", h.health)
	r.GET("/props", Handle(h.props))
	r.GET("/slots", Handle(h.slots))
	r.POST("/slots/:id", Handle(retired))
	r.POST("/slots/:id/:action", Handle(retired))
}

// retired answers llama.cpp's slot save/restore, which lanes with a shared prefix cache replace.
func retired(c *gin.Context) error {
	return &Error{Status: http.StatusNotImplemented, Type: "invalid_request_error", Code: "route_retired",
		Message: "saving and restoring slots is retired: every request is served warm from the prefix cache without it"}
}

// slots is llama.cpp's /slots with one aggregate entry for the model's lanes, for a model the
// request's key may use.
func (h *handlers) slots(c *gin.Context) error {
	m, err := h.describedModel(c)
	if err != nil {
		return err
	}
	m, s, err := h.svc.Slots(c.Request.Context(), m.ID)
	if err != nil {
		return err
	}
	busy := false
	for _, l := range s.Lanes {
		busy = busy || l.State != "idle"
	}
	info := m.Info()
	spec := h.defaultSpeculation(c, m)
	c.JSON(http.StatusOK, []gin.H{{
		"id": 0, "id_task": -1, "model": m.ID, "n_ctx": info.ContextLength, "speculative": spec != nil && spec["mode"] != llm.SpecOff,
		"is_processing": busy, "loaded": m.Loaded(),
		"lanes":                     s.Lanes,
		"queued":                    s.Queued,
		"inflight":                  m.Inflight(),
		"kv_cache":                  gin.H{"used_cells": s.KVUsed, "total_cells": s.KVTotal},
		"tick":                      s.Tick,
		"decode_tokens_per_second":  s.DecodeRate,
		"prefill_tokens_per_second": s.PrefillRate,
		"totals":                    s.Totals,
	}})
	return nil
}

// describedModel is the model /props and /slots describe: ?model= as the request's key sees the
// catalog (a model it may not use is a 404 like a missing one), else the default model among
// those it may use.
func (h *handlers) describedModel(c *gin.Context) (*core.Model, error) {
	if name := c.Query("model"); name != "" {
		return h.svc.ModelFor(c.Request.Context(), name)
	}
	return h.defaultModel(c)
}

// defaultModel is what /props and /slots describe when no model is named (llama-server serves
// one): the first loaded model the key may use, else the first of them in the catalog.
func (h *handlers) defaultModel(c *gin.Context) (*core.Model, error) {
	models := h.svc.VisibleModels(c.Request.Context())
	if len(models) == 0 {
		return nil, &Error{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "model_not_found",
			Message: "no model is served to this caller; superfluid pull fetches one (GET /v1/models lists the models a key may use)"}
	}
	for _, m := range models {
		if m.Loaded() {
			return m, nil
		}
	}
	return models[0], nil
}

// health is liveness only: the server answers; models load on their own schedule.
func (h *handlers) health(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}

// autoloadAllowed says why /props?autoload=1 may not load a model for r, or nil when it may.
// Loading is model management: an admin key once keys exist, this machine without them (as
// /v1/models/load), and never for a web page of another origin, which could otherwise make any
// visitor's server load models with a plain GET (an <img> on any site).
func autoloadAllowed(r *http.Request) error {
	if auth.CrossOrigin(r) {
		return &Error{Status: http.StatusForbidden, Type: "permission_error", Code: "admin_required",
			Message: "autoload is refused to web pages of other origins; load the model with POST /v1/models/load from this machine or with an admin key"}
	}
	if ok, refusal := auth.Admin(r); !ok {
		return &Error{Status: http.StatusForbidden, Type: "permission_error", Code: "admin_required",
			Message: "autoload loads the model: " + refusal}
	}
	return nil
}

func (h *handlers) props(c *gin.Context) error {
	m, err := h.describedModel(c)
	if err != nil {
		return err
	}
	if q := c.Query("autoload"); q == "1" || q == "true" {
		if err := autoloadAllowed(c.Request); err != nil {
			return err
		}
		if m, err = h.svc.LoadModel(c.Request.Context(), m.ID); err != nil {
			return err
		}
	}
	info := m.Info()
	path := m.Path
	if !auth.Trusted(c.Request) {
		path = filepath.Base(m.Path) // the absolute path is the operator's business (see entry)
	}
	c.JSON(http.StatusOK, gin.H{
		"model":                       m.ID,
		"model_path":                  path,
		"loaded":                      m.Loaded(),
		"max_context":                 info.ContextLength,
		"default_generation_settings": h.defaultSettings(c, m, info),
		"total_slots":                 info.Parallel,
		"chat_template":               m.Template.Source(),
		"chat_template_is_fallback":   m.Template.IsFallback(),
		"kv_cache": gin.H{
			"n_ctx_per_lane": info.ContextLength, "lanes": info.Parallel, "type": "f16", "unified": false,
		},
		"capabilities": capabilities(m),
		"runtime":      info.Runtime,
		"threads":      info.Threads,
	})
	return nil
}

// defaultSettings are /props' default_generation_settings: the window, the model, the
// sampling defaults and the speculation a request naming none runs with (left out where this
// server does not decide it: another server's model, unreadable settings).
func (h *handlers) defaultSettings(c *gin.Context, m *core.Model, info llm.ModelInfo) gin.H {
	out := gin.H{"n_ctx": info.ContextLength, "model": m.ID, "params": h.defaultParams(c, m)}
	if spec := h.defaultSpeculation(c, m); spec != nil {
		out["speculative"] = spec
	}
	return out
}

// defaultSpeculation is the mode and draft tokens of a request naming none ({"mode"} alone
// when the engine's default draft length applies); nil when not this server's to say.
func (h *handlers) defaultSpeculation(c *gin.Context, m *core.Model) gin.H {
	d, err := h.svc.DefaultsFor(c.Request.Context(), m)
	if err != nil || d.Speculative == nil {
		return nil
	}
	spec := gin.H{"mode": d.Speculative.Mode}
	if d.Speculative.DraftTokens > 0 {
		spec["draft_tokens"] = d.Speculative.DraftTokens
	}
	return spec
}

// defaultParams are the sampling settings and cap a request that names nothing runs with on m:
// the model's own settings where it has them, else the server's defaults. What the server does
// not decide is left out rather than guessed: what the model's settings would decide when they
// cannot be read, and on a model another server runs (core.Defaults.Engine) every setting
// neither the model's settings nor the server's flags set.
func (h *handlers) defaultParams(c *gin.Context, m *core.Model) gin.H {
	d, err := h.svc.DefaultsFor(c.Request.Context(), m)
	params := gin.H{}
	if err != nil || !d.Engine {
		params = gin.H{
			"repeat_last_n": llm.RepeatLastN, "presence_penalty": 0.0, "frequency_penalty": 0.0,
			"seed": -1, "ignore_eos": false, "stop": []string{},
		}
	}
	if err != nil {
		return params
	}
	sm := d.Sampling
	for name, v := range map[string]any{"temperature": sm.Temperature, "top_p": sm.TopP, "top_k": sm.TopK,
		"min_p": sm.MinP, "repeat_penalty": sm.RepeatPenalty} {
		switch v := v.(type) {
		case *float64:
			if v != nil {
				params[name] = *v
			}
		case *int:
			if v != nil {
				params[name] = *v
			}
		}
	}
	switch {
	case d.MaxTokens > 0:
		params["n_predict"], params["max_tokens"] = d.MaxTokens, d.MaxTokens
	case !d.Engine:
		params["n_predict"], params["max_tokens"] = -1, -1 // llama.cpp's "until the context is full"
	}
	if d.SystemPrompt != "" {
		params["system_prompt"] = d.SystemPrompt
	}
	return params
}
