package anthropic

import (
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/sse"
)

// stream serves the generation as Anthropic's event sequence: message_start once a lane takes
// the request; then content blocks in reply order, each content_block_start, deltas and
// content_block_stop (ping after the first start); then message_delta (stop_reason, usage) and
// message_stop. An error after the stream began is an `event: error` frame, and the stream
// ends there.
func (h *handlers) stream(c *gin.Context, creq *core.ChatRequest, model string, omitThinking bool, warn warnings) error {
	s := sse.New(c.Writer, h.opts.KeepAlive, h.opts.WriteTimeout)
	defer s.Close()
	w := &blockWriter{s: s, omitThinking: omitThinking, warn: warn, maxTokens: creq.Generation.MaxTokens}
	_, err := h.svc.Chat(c.Request.Context(), creq, func(_ int, ev llm.Event) error {
		switch {
		case ev.Started != nil:
			st := ev.Started
			s.SetHeader(WarmHeader, strconv.Itoa(st.CachedTokens))
			start := reply{
				ID: creq.ID, Type: "message", Role: "assistant", Model: model,
				Content: []any{}, Usage: toUsage(st.PromptTokens, st.CachedTokens, 0),
			}
			return s.Event("message_start", messageStart{Type: "message_start", Message: start})
		case ev.Done != nil:
			return w.finish(ev)
		default:
			return w.pieces(ev)
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

// Block kinds.
const (
	kindText     = "text"
	kindThinking = "thinking"
	kindToolUse  = "tool_use"
)

// blockWriter turns a reply's events into content blocks. One block is open at a time: a piece
// of another kind (reasoning, text, a new tool call) closes it and opens the next, at the next
// index, so indexes are consecutive whatever order the model produced things in.
type blockWriter struct {
	s            *sse.Stream
	omitThinking bool
	warn         warnings // the request's, sent with message_delta
	maxTokens    int      // the request's max_tokens
	open         string   // the open block's kind; "" when none
	index        int      // the open block's index, or the next block's when none is open
	call         int      // the open tool_use block's call index
	pinged       bool
	sig          *signer // the open thinking block's signature
}

// pieces writes the reasoning, text and tool calls an event carries, in that order.
func (w *blockWriter) pieces(ev llm.Event) error {
	if ev.Reasoning != "" {
		if w.open != kindThinking {
			if err := w.start(kindThinking, thinkingBlock{Type: kindThinking}); err != nil {
				return err
			}
			w.sig = newSigner()
		}
		w.sig.add(ev.Reasoning)
		if !w.omitThinking {
			if err := w.delta(thinkingDelta{Type: "thinking_delta", Thinking: ev.Reasoning}); err != nil {
				return err
			}
		}
	}
	if ev.Text != "" {
		if w.open != kindText {
			if err := w.start(kindText, textBlock{Type: kindText}); err != nil {
				return err
			}
		}
		if err := w.delta(textDelta{Type: "text_delta", Text: ev.Text}); err != nil {
			return err
		}
	}
	for _, d := range ev.ToolCalls {
		if d.Name != "" { // the opening delta of a call
			b := toolUseBlock{Type: kindToolUse, ID: toolUseID(d.ID), Name: d.Name, Input: input(nil)}
			if err := w.start(kindToolUse, b); err != nil {
				return err
			}
			w.call = d.Index
		}
		// The core sends a call's arguments right after its opening delta, so they belong to
		// the open block; a fragment for any other call has no block to go to.
		if d.Arguments == "" || w.open != kindToolUse || d.Index != w.call {
			continue
		}
		if err := w.delta(inputJSONDelta{Type: "input_json_delta", PartialJSON: d.Arguments}); err != nil {
			return err
		}
	}
	return nil
}

// finish writes the last pieces (held text, a call completed by the end), closes the open
// block (a reply with none gets an empty text block, as Anthropic sends), then message_delta
// and message_stop.
func (w *blockWriter) finish(ev llm.Event) error {
	if err := w.pieces(ev); err != nil {
		return err
	}
	if w.open == "" && w.index == 0 {
		if err := w.start(kindText, textBlock{Type: kindText}); err != nil {
			return err
		}
	}
	if err := w.stop(); err != nil {
		return err
	}
	reason, seq := stopReason(*ev.Done)
	u := ev.Done.Usage
	md := messageDelta{Type: "message_delta", Delta: stopDelta{StopReason: &reason, StopSequence: seq},
		Usage: toUsage(u.PromptTokens, u.CachedTokens, u.CompletionTokens)}
	md.Superfluid = extra(withWindow(w.warn, *ev.Done, w.maxTokens), *ev.Done)
	return send(w.s, frame{"message_delta", md}, frame{"message_stop", messageStop{Type: "message_stop"}})
}

// start closes the open block and opens one of kind at the next index; the first start is
// followed by a ping, as Anthropic sends it.
func (w *blockWriter) start(kind string, b any) error {
	if err := w.stop(); err != nil {
		return err
	}
	w.open = kind
	if err := w.s.Event("content_block_start", blockStart{Type: "content_block_start", Index: w.index, ContentBlock: b}); err != nil {
		return err
	}
	if w.pinged {
		return nil
	}
	w.pinged = true
	return w.s.Event("ping", ping{Type: "ping"})
}

// delta writes a delta to the open block.
func (w *blockWriter) delta(d any) error {
	return w.s.Event("content_block_delta", blockDelta{Type: "content_block_delta", Index: w.index, Delta: d})
}

// stop closes the open block, if any; a thinking block gets its signature first.
func (w *blockWriter) stop() error {
	if w.open == "" {
		return nil
	}
	if w.open == kindThinking {
		if err := w.delta(signatureDelta{Type: "signature_delta", Signature: w.sig.signature()}); err != nil {
			return err
		}
	}
	w.open = ""
	w.index++
	return w.s.Event("content_block_stop", blockStop{Type: "content_block_stop", Index: w.index - 1})
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
