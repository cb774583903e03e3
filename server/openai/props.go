package openai

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/llm"
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

// slots is llama.cpp's /slots with one aggregate entry for the model's lanes.
func (h *handlers) slots(c *gin.Context) error {
	name := c.Query("model")
	if name == "" {
		m, err := h.defaultModel()
		if err != nil {
			return err
		}
		name = m.ID
	}
	m, s, err := h.svc.Slots(c.Request.Context(), name)
	if err != nil {
		return err
	}
	busy := false
	for _, l := range s.Lanes {
		busy = busy || l.State != "idle"
	}
	info := m.Info()
	c.JSON(http.StatusOK, []gin.H{{
		"id": 0, "id_task": -1, "model": m.ID, "n_ctx": info.ContextLength, "speculative": false,
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

// defaultModel is what /props and /slots describe when no model is named (llama-server serves
// one): the first loaded model, else the first in the catalog.
func (h *handlers) defaultModel() (*core.Model, error) {
	models := h.svc.Models()
	if len(models) == 0 {
		return nil, &Error{Status: http.StatusNotFound, Type: "invalid_request_error", Message: "no model is served; superfluid pull fetches one"}
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

func (h *handlers) props(c *gin.Context) error {
	var m *core.Model
	var err error
	if name := c.Query("model"); name != "" {
		m, err = h.svc.ModelFor(c.Request.Context(), name)
	} else {
		m, err = h.defaultModel()
	}
	if err != nil {
		return err
	}
	if c.Query("autoload") == "1" || c.Query("autoload") == "true" {
		if _, err := h.svc.LoadModel(c.Request.Context(), m.ID); err != nil {
			return err
		}
	}
	info := m.Info()
	maxTokens := h.svc.Config().MaxTokens
	if maxTokens == 0 {
		maxTokens = -1 // llama.cpp's "until the context is full"
	}
	params := gin.H{
		"temperature": llm.DefaultTemperature, "top_k": llm.DefaultTopK, "top_p": llm.DefaultTopP,
		"min_p": llm.DefaultMinP, "repeat_penalty": llm.DefaultRepeatPenalty, "repeat_last_n": llm.RepeatLastN,
		"presence_penalty": 0.0, "frequency_penalty": 0.0, "n_predict": maxTokens, "max_tokens": maxTokens,
		"seed": -1, "ignore_eos": false, "stop": []string{},
	}
	c.JSON(http.StatusOK, gin.H{
		"model":       m.ID,
		"model_path":  m.Path,
		"loaded":      m.Loaded(),
		"max_context": info.ContextLength,
		"default_generation_settings": gin.H{
			"n_ctx": info.ContextLength, "model": m.ID, "params": params,
		},
		"total_slots":               info.Parallel,
		"chat_template":             m.Template.Source(),
		"chat_template_is_fallback": m.Template.IsFallback(),
		"kv_cache": gin.H{
			"n_ctx_per_lane": info.ContextLength, "lanes": info.Parallel, "type": "f16", "unified": false,
		},
		"capabilities": capabilities(m),
		"runtime":      info.Runtime,
		"threads":      info.Threads,
	})
	return nil
}
