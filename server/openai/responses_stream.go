package openai

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/sse"
)

// responseStream writes the Responses API's typed events, numbering them from 0: the
// response's created and in_progress, then each output item's events as the outputBuilder
// announces them, then the terminal event.
type responseStream struct {
	s     *sse.Stream
	seq   int
	obj   responseObject // the response as announced
	out   *outputBuilder
	begun bool
}

func (rs *responseStream) send(ev responseEvent) error {
	ev.SequenceNumber = rs.seq
	rs.seq++
	return rs.s.Event(ev.Type, ev)
}

// begin announces the response; its items open as the reply produces them.
func (rs *responseStream) begin() error {
	if rs.begun {
		return nil
	}
	rs.begun = true
	for _, ev := range []responseEvent{
		{Type: "response.created", Response: &rs.obj},
		{Type: "response.in_progress", Response: &rs.obj},
	} {
		if err := rs.send(ev); err != nil {
			return err
		}
	}
	return nil
}

// item sends an output item's event, announcing the response first if it was not yet.
func (rs *responseStream) item(ev responseEvent) error {
	if err := rs.begin(); err != nil {
		return err
	}
	return rs.send(ev)
}

// fail reports an error after the stream began: response.failed once the response was
// announced, else an `error` event.
func (rs *responseStream) fail(err error) {
	e := toError(responsesError(err))
	if !rs.begun {
		ev := errorEvent{Type: "error", SequenceNumber: rs.seq, Message: e.Message}
		if e.Code != "" {
			ev.Code = &e.Code
		}
		if e.Param != "" {
			ev.Param = &e.Param
		}
		rs.seq++
		_ = rs.s.Event("error", ev)
		return
	}
	obj := rs.obj
	obj.Status = "failed"
	obj.Error = &responseError{Code: failureCode(e), Message: e.Message}
	obj.Output = rs.out.partial()
	_ = rs.send(responseEvent{Type: "response.failed", Response: &obj})
}

// failureCode is the Response error code closest to e.
func failureCode(e *Error) string {
	switch {
	case e.Status == http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	case e.Status >= 400 && e.Status < 500:
		return "invalid_prompt"
	default:
		return "server_error"
	}
}

// streamResponse runs the generation as SSE events. Errors found before the first event get
// a proper status code; later ones travel as response.failed (or error). There is no [DONE].
func (h *handlers) streamResponse(c *gin.Context, creq *core.ChatRequest, p *responseParams) error {
	s := sse.New(c.Writer, h.opts.KeepAlive, h.opts.WriteTimeout)
	defer s.Close()
	rs := &responseStream{s: s, obj: p.obj}
	rs.out = newOutputBuilder(rs.item, p)
	res, err := h.svc.Chat(c.Request.Context(), creq, func(_ int, ev llm.Event) error {
		if ev.Started != nil {
			s.SetHeader(WarmHeader, strconv.Itoa(ev.Started.CachedTokens))
			return rs.begin()
		}
		return rs.out.add(ev)
	})
	if err != nil {
		if !s.Settle() {
			return responsesError(err)
		}
		if !errors.Is(err, context.Canceled) {
			rs.fail(err)
		}
		return nil
	}
	if err := rs.begin(); err != nil {
		return nil // the client is gone
	}
	obj, err := finishResponse(p.obj, rs.out, res.Choices[0])
	if err != nil {
		return nil // the client is gone
	}
	if err := h.keep(c, p, &obj); err != nil {
		rs.fail(err)
		return nil
	}
	terminal := "response.completed"
	if obj.Status == "incomplete" {
		terminal = "response.incomplete"
	}
	_ = rs.send(responseEvent{Type: terminal, Response: &obj})
	return nil
}
