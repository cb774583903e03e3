package anthropic

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

// WarmHeader carries the prompt tokens served from the prefix cache (as in every dialect).
const WarmHeader = "x-superfluid-warm"

// Stop reasons.
const (
	stopEndTurn   = "end_turn"
	stopMaxTokens = "max_tokens"
	stopSequence  = "stop_sequence"
	stopToolUse   = "tool_use"
)

// Options tune the dialect.
type Options struct {
	// KeepAlive is the interval of SSE comment keep-alives; 0 disables them.
	KeepAlive time.Duration
	// WriteTimeout bounds the write of each SSE frame (0: no bound); a client that stops
	// reading for longer is dropped and its generation stopped.
	WriteTimeout time.Duration
}

type handlers struct {
	svc  *core.Service
	opts Options
}

// Routes registers the Anthropic routes on r. The x-api-key, anthropic-version and
// anthropic-beta headers are accepted and not required.
func Routes(r gin.IRouter, svc *core.Service, opts Options) {
	h := &handlers{svc: svc, opts: opts}
	r.POST("/v1/messages", Handle(h.messages))
	r.POST("/v1/messages/count_tokens", Handle(h.countTokens))
	// Other methods answer 405 in this dialect's shape rather than the router's default.
	others := []string{http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete}
	r.Match(others, "/v1/messages", Handle(postOnly))
	r.Match(others, "/v1/messages/count_tokens", Handle(postOnly))
}

func postOnly(c *gin.Context) error {
	c.Header("Allow", http.MethodPost)
	return &Error{Status: http.StatusMethodNotAllowed, Type: TypeInvalidRequest,
		Message: fmt.Sprintf("%s is not allowed on %s; use POST", c.Request.Method, c.Request.URL.Path)}
}

func (h *handlers) messages(c *gin.Context) error {
	var req messagesRequest
	if err := decode(c.Request, &req); err != nil {
		return err
	}
	creq, warn, err := toCore(&req, h.svc.ModelOptional())
	if err != nil {
		return err
	}
	if err := h.svc.CheckKeepAlive(c.Request.Context(), creq.KeepAlive); err != nil {
		return err // keep_alive 0 unloads the model: an admin key's call once keys exist
	}
	omit := req.omitsThinking()
	if creq.Stream {
		// message_start names the model by its id, as the request's key sees the catalog; a
		// name it cannot use fails (and is recorded) in Chat.
		model := creq.Model
		if m, err := h.svc.ModelFor(c.Request.Context(), model); err == nil {
			model = m.ID
		}
		return h.stream(c, creq, model, omit, warn)
	}
	var r core.Reply
	res, err := h.svc.Chat(c.Request.Context(), creq, func(_ int, ev llm.Event) error {
		r.Add(ev)
		return nil
	})
	if err != nil {
		return err
	}
	done := res.Choices[0]
	reason, seq := stopReason(done)
	out := reply{
		ID: creq.ID, Type: "message", Role: "assistant", Model: res.Model.ID,
		Content: replyContent(&r, omit), StopReason: &reason, StopSequence: seq,
		Usage: toUsage(done.Usage.PromptTokens, done.Usage.CachedTokens, done.Usage.CompletionTokens),
	}
	out.Superfluid = extra(withWindow(warn, done, creq.Generation.MaxTokens), done)
	c.Header(WarmHeader, strconv.Itoa(done.Usage.CachedTokens))
	c.JSON(http.StatusOK, out)
	return nil
}

// extra is the reply's superfluid object: the request's warnings, then the reply's, and what
// speculative decoding did; nil when there is nothing to say.
func extra(warn warnings, d llm.Done) *replyExtra {
	if d.Warning != "" {
		warn = append(warn[:len(warn):len(warn)], d.Warning)
	}
	spec := core.SpecReportOf(d)
	if len(warn) == 0 && spec == nil {
		return nil
	}
	return &replyExtra{Warnings: warn, Spec: spec}
}

// withWindow adds a note when the reply stopped at the end of the context window before
// max_tokens (a max_tokens past what the window leaves is capped there, not refused): the
// client sees stop_reason max_tokens with fewer tokens than it allowed, and why.
func withWindow(warn warnings, d llm.Done, maxTokens int) warnings {
	if d.FinishReason != llm.FinishLength || d.Expired || d.Usage.CompletionTokens >= maxTokens {
		return warn
	}
	u := d.Usage
	return append(warn[:len(warn):len(warn)], fmt.Sprintf("the reply filled the model's context window (%d tokens: %d of prompt, %d generated) "+
		"before max_tokens %d; load the model with a larger context length for longer replies", u.PromptTokens+u.CompletionTokens, u.PromptTokens, u.CompletionTokens, maxTokens))
}

// replyContent is a whole reply's content blocks: thinking (when the model reasoned), text
// (left out when empty beside tool calls, as Anthropic does), then a tool_use block per call.
func replyContent(r *core.Reply, omitThinking bool) []any {
	content := []any{}
	if reasoning := r.Reasoning(); reasoning != "" {
		b := thinkingBlock{Type: "thinking", Thinking: reasoning, Signature: signature(reasoning)}
		if omitThinking {
			b.Thinking = ""
		}
		content = append(content, b)
	}
	if text := r.Content(); text != "" || len(r.ToolCalls) == 0 {
		content = append(content, textBlock{Type: "text", Text: text})
	}
	for _, call := range r.ToolCalls {
		content = append(content, toolUseBlock{Type: "tool_use", ID: toolUseID(call.ID), Name: call.Name, Input: input(call.Arguments)})
	}
	return content
}

// input is a call's arguments as a tool_use input: always an object. Arguments that are not one
// belong to a call the token cap cut (the core's warning says so): the input is the longest
// prefix of them that parses, closed. (A stream sends them as generated, in input_json_delta.)
func input(args []byte) json.RawMessage {
	if len(args) == 0 {
		return json.RawMessage("{}")
	}
	if !json.Valid(args) {
		closed, _ := chat.CloseJSON(string(args))
		return closed
	}
	return args
}

// stopReason maps the engine's finish to Anthropic's stop_reason and stop_sequence. A reply cut
// by max_tokens says so even when it holds calls: they may be incomplete.
func stopReason(d llm.Done) (string, *string) {
	switch {
	case d.FinishReason == llm.FinishLength:
		return stopMaxTokens, nil
	case d.FinishReason == llm.FinishToolCalls:
		return stopToolUse, nil
	case d.StopSequence != "":
		seq := d.StopSequence
		return stopSequence, &seq
	default:
		return stopEndTurn, nil
	}
}

func toUsage(prompt, cached, output int) usage {
	return usage{InputTokens: prompt - cached, CacheReadInputTokens: cached, OutputTokens: output}
}

// countTokens counts the prompt the conversation would render to, tools included.
func (h *handlers) countTokens(c *gin.Context) error {
	var req conversation
	if err := decode(c.Request, &req); err != nil {
		return err
	}
	if err := req.check(h.svc.ModelOptional()); err != nil {
		return err
	}
	creq, _, err := req.toCore() // warnings are a reply's; a count has none
	if err != nil {
		return err
	}
	n, err := h.svc.CountChatTokens(c.Request.Context(), creq)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, tokenCount{InputTokens: n})
	return nil
}
