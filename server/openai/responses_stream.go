package openai

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/sse"
)

// responseStream writes the Responses API's typed events, numbering them from 0.
type responseStream struct {
	s     *sse.Stream
	seq   int
	obj   responseObject // the response as announced
	msgID string
	text  strings.Builder
	begun bool
}

func (rs *responseStream) send(ev responseEvent) error {
	ev.SequenceNumber = rs.seq
	rs.seq++
	return rs.s.Event(ev.Type, ev)
}

// begin announces the response and opens its one message with one output_text part.
func (rs *responseStream) begin() error {
	if rs.begun {
		return nil
	}
	rs.begun = true
	zero := 0
	item := outputItem(rs.msgID, "in_progress", "")
	for _, ev := range []responseEvent{
		{Type: "response.created", Response: &rs.obj},
		{Type: "response.in_progress", Response: &rs.obj},
		{Type: "response.output_item.added", OutputIndex: &zero, Item: &item},
		{Type: "response.content_part.added", OutputIndex: &zero, ItemID: rs.msgID, ContentIndex: &zero,
			Part: &part{Type: "output_text"}},
	} {
		if err := rs.send(ev); err != nil {
			return err
		}
	}
	return nil
}

func (rs *responseStream) delta(text string) error {
	if err := rs.begin(); err != nil {
		return err
	}
	rs.text.WriteString(text)
	zero := 0
	return rs.send(responseEvent{Type: "response.output_text.delta", OutputIndex: &zero, ItemID: rs.msgID,
		ContentIndex: &zero, Delta: &text, Logprobs: &[]struct{}{}})
}

// finish closes the part and the item; the caller then sends the terminal event.
func (rs *responseStream) finish(obj *responseObject) error {
	zero := 0
	text := rs.text.String()
	final := obj.Output[0]
	for _, ev := range []responseEvent{
		{Type: "response.output_text.done", OutputIndex: &zero, ItemID: rs.msgID, ContentIndex: &zero,
			Text: &text, Logprobs: &[]struct{}{}},
		{Type: "response.content_part.done", OutputIndex: &zero, ItemID: rs.msgID, ContentIndex: &zero,
			Part: &final.Content[0]},
		{Type: "response.output_item.done", OutputIndex: &zero, Item: &final},
	} {
		if err := rs.send(ev); err != nil {
			return err
		}
	}
	return nil
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
	if len(rs.text.String()) > 0 {
		obj.Output = []item{outputItem(rs.msgID, "incomplete", rs.text.String())}
	}
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
	rs := &responseStream{s: s, obj: p.obj, msgID: newID("msg_")}
	res, err := h.svc.Chat(c.Request.Context(), creq, func(_ int, ev llm.Event) error {
		switch {
		case ev.Started != nil:
			s.SetHeader(WarmHeader, strconv.Itoa(ev.Started.CachedTokens))
			return rs.begin()
		case ev.Text != "":
			return rs.delta(ev.Text)
		}
		return nil
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
	obj := finishResponse(p.obj, rs.msgID, rs.text.String(), res.Choices[0])
	if err := rs.finish(&obj); err != nil {
		return nil
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
