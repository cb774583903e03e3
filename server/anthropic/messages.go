package anthropic

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/sse"
)

// WarmHeader carries the prompt tokens served from the prefix cache (as in every dialect).
const WarmHeader = "x-superfluid-warm"

// Stop reasons.
const (
	stopEndTurn   = "end_turn"
	stopMaxTokens = "max_tokens"
	stopSequence  = "stop_sequence"
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
	creq, err := toCore(&req)
	if err != nil {
		return err
	}
	if creq.Stream {
		// message_start names the model by its id; an unknown name fails (and is recorded) in Chat.
		model := creq.Model
		if m, err := h.svc.Model(model); err == nil {
			model = m.ID
		}
		return h.stream(c, creq, model)
	}
	var text strings.Builder
	res, err := h.svc.Chat(c.Request.Context(), creq, func(_ int, ev llm.Event) error {
		text.WriteString(ev.Text)
		return nil
	})
	if err != nil {
		return err
	}
	done := res.Choices[0]
	reason, seq := stopReason(done)
	c.Header(WarmHeader, strconv.Itoa(done.Usage.CachedTokens))
	c.JSON(http.StatusOK, reply{
		ID: creq.ID, Type: "message", Role: "assistant", Model: res.Model.ID,
		Content:    []textBlock{{Type: "text", Text: text.String()}},
		StopReason: &reason, StopSequence: seq,
		Usage: toUsage(done.Usage.PromptTokens, done.Usage.CachedTokens, done.Usage.CompletionTokens),
	})
	return nil
}

// stopReason maps the engine's finish to Anthropic's stop_reason and stop_sequence.
func stopReason(d llm.Done) (string, *string) {
	switch {
	case d.FinishReason == llm.FinishLength:
		return stopMaxTokens, nil
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

// stream serves the generation as Anthropic's event sequence: message_start, content_block_start
// and ping once a lane takes the request, a content_block_delta per piece of text, then
// content_block_stop, message_delta (stop_reason, usage) and message_stop. An error after the
// stream began is an `event: error` frame, and the stream ends there.
func (h *handlers) stream(c *gin.Context, creq *core.ChatRequest, model string) error {
	s := sse.New(c.Writer, h.opts.KeepAlive, h.opts.WriteTimeout)
	defer s.Close()
	_, err := h.svc.Chat(c.Request.Context(), creq, func(_ int, ev llm.Event) error {
		switch {
		case ev.Started != nil:
			st := ev.Started
			s.SetHeader(WarmHeader, strconv.Itoa(st.CachedTokens))
			start := reply{
				ID: creq.ID, Type: "message", Role: "assistant", Model: model,
				Content: []textBlock{}, Usage: toUsage(st.PromptTokens, st.CachedTokens, 0),
			}
			return send(s,
				frame{"message_start", messageStart{Type: "message_start", Message: start}},
				frame{"content_block_start", blockStart{Type: "content_block_start", ContentBlock: textBlock{Type: "text"}}},
				frame{"ping", ping{Type: "ping"}})
		case ev.Done != nil:
			reason, seq := stopReason(*ev.Done)
			u := ev.Done.Usage
			return send(s,
				frame{"content_block_stop", blockStop{Type: "content_block_stop"}},
				frame{"message_delta", messageDelta{Type: "message_delta",
					Delta: stopDelta{StopReason: &reason, StopSequence: seq},
					Usage: toUsage(u.PromptTokens, u.CachedTokens, u.CompletionTokens)}},
				frame{"message_stop", messageStop{Type: "message_stop"}})
		case ev.Text != "":
			return s.Event("content_block_delta", blockDelta{Type: "content_block_delta",
				Delta: textDelta{Type: "text_delta", Text: ev.Text}})
		default:
			return nil
		}
	})
	if err != nil {
		if !s.Settle() {
			return err
		}
		// The stream has begun: the error travels as an error event, which ends the stream.
		_ = s.Event("error", toError(err).wire(requestID(c)))
	}
	return nil
}

// frame is one named event.
type frame struct {
	name string
	v    any
}

// send writes frames in order, stopping at the first failed write.
func send(s *sse.Stream, frames ...frame) error {
	for _, f := range frames {
		if err := s.Event(f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

func (h *handlers) countTokens(c *gin.Context) error {
	var req conversation
	if err := decode(c.Request, &req); err != nil {
		return err
	}
	if err := req.check(); err != nil {
		return err
	}
	msgs, err := req.messages()
	if err != nil {
		return err
	}
	n, err := h.svc.CountTokens(c.Request.Context(), *req.Model, msgs, nil)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, tokenCount{InputTokens: n})
	return nil
}
