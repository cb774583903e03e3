package openai

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/llm"
)

// llama.cpp server routes, answered in OpenAI's error shape.
func (h *handlers) routesLlamaCpp(r gin.IRouter) {
	r.GET("/health", h.health)
	r.GET("/props", Handle(h.props))
}

// health is liveness only: the server answers; models load on their own schedule.
func (h *handlers) health(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}

func (h *handlers) props(c *gin.Context) error {
	models := h.svc.Models()
	if len(models) == 0 {
		return &Error{Status: http.StatusNotFound, Type: "invalid_request_error", Message: "no model is served"}
	}
	m := models[0]
	if name := c.Query("model"); name != "" {
		var err error
		if m, err = h.svc.Model(name); err != nil {
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
		"capabilities": Capabilities(m),
		"runtime":      info.Runtime,
		"threads":      info.Threads,
	})
	return nil
}
