package anthropic

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

// IsClient reports whether a request comes from an Anthropic client: the SDKs and Claude Code
// send anthropic-version on every request. x-api-key alone does not tell, since OpenAI clients
// may send their key in it too.
func IsClient(r *http.Request) bool { return r.Header.Get("anthropic-version") != "" }

// ModelHandlers answer GET /v1/models and GET /v1/models/{model} in Anthropic's shape. The
// OpenAI dialect owns those routes and hands a request to them when IsClient says it is an
// Anthropic client's.
func ModelHandlers(svc *core.Service) (list, get gin.HandlerFunc) {
	h := &handlers{svc: svc}
	return Handle(h.listModels), Handle(h.getModel)
}

// modelInfo is Anthropic's model object. max_input_tokens and max_tokens are the window the
// model serves with: the prompt and the reply share it, and a max_tokens above what is left of
// it is capped, not refused.
type modelInfo struct {
	Type           string            `json:"type"`
	ID             string            `json:"id"`
	DisplayName    string            `json:"display_name"`
	CreatedAt      string            `json:"created_at"`
	MaxInputTokens int               `json:"max_input_tokens"`
	MaxTokens      int               `json:"max_tokens"`
	Lifecycle      string            `json:"lifecycle"`
	Line           *string           `json:"line"`
	DeprecatedAt   *string           `json:"deprecated_at"`
	RetiresAt      *string           `json:"retires_at"`
	Capabilities   modelCapabilities `json:"capabilities"`
}

type supported struct {
	Supported bool `json:"supported"`
}

// modelCapabilities is what this server does with the model, in Anthropic's terms: thinking
// and effort as the chat template knows them; no server tools, files or citations.
type modelCapabilities struct {
	Batch             supported `json:"batch"`
	Citations         supported `json:"citations"`
	CodeExecution     supported `json:"code_execution"`
	ContextManagement supported `json:"context_management"`
	Effort            struct {
		Supported bool      `json:"supported"`
		Low       supported `json:"low"`
		Medium    supported `json:"medium"`
		High      supported `json:"high"`
	} `json:"effort"`
	ImageInput        supported `json:"image_input"`
	PDFInput          supported `json:"pdf_input"`
	ServerTools       supported `json:"server_tools"`
	StructuredOutputs supported `json:"structured_outputs"`
	Thinking          struct {
		Supported bool `json:"supported"`
		Types     struct {
			Enabled  supported `json:"enabled"`
			Adaptive supported `json:"adaptive"`
			Disabled supported `json:"disabled"`
		} `json:"types"`
	} `json:"thinking"`
}

func describe(m *core.Model) modelInfo {
	window := m.Info().ContextLength
	info := modelInfo{Type: "model", ID: m.ID, DisplayName: m.ID, CreatedAt: m.Created.UTC().Format(time.RFC3339),
		MaxInputTokens: window, MaxTokens: window, Lifecycle: "active"}
	if m.Created.IsZero() {
		info.CreatedAt = time.Unix(0, 0).UTC().Format(time.RFC3339) // Anthropic's "release date unknown"
	}
	caps := m.Capabilities()
	c := &info.Capabilities
	c.StructuredOutputs.Supported = true // the grammar engine constrains tool input and output formats
	c.ImageInput.Supported, _ = m.Modalities()
	c.Thinking.Supported = caps.Thinking
	c.Thinking.Types.Enabled.Supported, c.Thinking.Types.Adaptive.Supported = caps.Thinking, caps.Thinking
	c.Thinking.Types.Disabled.Supported = true // true on a model that does not think, as Anthropic says
	c.Effort.Supported = caps.ReasoningEffort
	c.Effort.Low.Supported, c.Effort.Medium.Supported, c.Effort.High.Supported = caps.ReasoningEffort, caps.ReasoningEffort, caps.ReasoningEffort
	return info
}

// modelPage is GET /v1/models's answer: a page of models in the server's order.
type modelPage struct {
	Data    []modelInfo `json:"data"`
	HasMore bool        `json:"has_more"`
	FirstID *string     `json:"first_id"`
	LastID  *string     `json:"last_id"`
}

// listModels pages through the models the caller may use with Anthropic's limit (1-1000,
// default 20), after_id and before_id.
func (h *handlers) listModels(c *gin.Context) error {
	limit := 20
	if s, ok := c.GetQuery("limit"); ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			return invalid("limit: Input should be a whole number from 1 to 1000")
		}
		limit = n
	}
	all := h.svc.VisibleModels(c.Request.Context())
	ids := make([]string, len(all))
	for i, m := range all {
		ids[i] = m.ID
	}
	lo, hi := 0, len(all)
	if after := c.Query("after_id"); after != "" {
		i := slices.Index(ids, after)
		if i < 0 {
			return invalid("after_id: no model %q; GET /v1/models lists the models", after)
		}
		lo = i + 1
	}
	if before := c.Query("before_id"); before != "" {
		i := slices.Index(ids, before)
		if i < 0 {
			return invalid("before_id: no model %q; GET /v1/models lists the models", before)
		}
		hi = i
	}
	page := modelPage{Data: []modelInfo{}}
	if lo < hi {
		// before_id pages backwards: the models just before it.
		from, to := lo, min(hi, lo+limit)
		if c.Query("before_id") != "" && c.Query("after_id") == "" {
			from, to = max(lo, hi-limit), hi
		}
		for _, m := range all[from:to] {
			page.Data = append(page.Data, describe(m))
		}
		page.FirstID, page.LastID = &ids[from], &ids[to-1]
		page.HasMore = to < hi
		if c.Query("before_id") != "" && c.Query("after_id") == "" {
			page.HasMore = from > lo
		}
	}
	c.JSON(http.StatusOK, page)
	return nil
}

func (h *handlers) getModel(c *gin.Context) error {
	// The wildcard keeps ids with slashes (paths, "org/name") whole.
	name := strings.TrimPrefix(c.Param("model"), "/")
	if name == "" {
		return fmt.Errorf("%w: the model \"\" does not exist; GET /v1/models lists the models", llm.ErrModelNotFound)
	}
	m, err := h.svc.ModelFor(c.Request.Context(), name)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, describe(m))
	return nil
}
