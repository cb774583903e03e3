package forward

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

// Chat streams one choice of req from the upstream, relaying each delta as it arrives.
func (e *Engine) Chat(ctx context.Context, req *core.ChatRequest, emit func(llm.Event) error) error {
	return e.stream(ctx, "/chat/completions", chatOf(e.cfg.Model, req), emit)
}

// Complete streams one choice of a raw text completion from the upstream.
func (e *Engine) Complete(ctx context.Context, req *core.CompletionRequest, emit func(llm.Event) error) error {
	return e.stream(ctx, "/completions", completionOf(e.cfg.Model, req), emit)
}

// maxLine bounds one SSE line: a chunk of a few tokens is far shorter, so a longer line is
// an upstream gone wrong.
const maxLine = 4 << 20

// stream posts body to path and relays its SSE reply. The upstream has HeaderTimeout for its
// headers and first line, and IdleTimeout for each line after; past either the reply ends with
// a 502, as does a malformed chunk or a stream cut before its end. A client gone (ctx done, or
// emit failing) cancels the upstream request.
func (e *Engine) stream(ctx context.Context, path string, body any, emit func(llm.Event) error) error {
	ctx, watchdog, cancel := e.watch(ctx)
	defer cancel(nil)
	defer watchdog.Stop()
	resp, err := e.post(ctx, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return broken(e.base, fmt.Sprintf("answered a streamed request with %q, not an event stream", resp.Header.Get("Content-Type")))
	}
	r := &relay{emit: emit, opened: map[int]bool{}}
	lines := bufio.NewReaderSize(resp.Body, 64<<10)
	var data []string // the data lines of the event being read
	for {
		line, err := readLine(lines)
		watchdog.started()
		if err != nil {
			if cause := context.Cause(ctx); cause != nil {
				return cause // stalled, or the client is gone
			}
			if errors.Is(err, io.EOF) && len(data) == 0 && r.finish != "" {
				return r.done() // an upstream that ends without [DONE] after finishing
			}
			return broken(e.base, "closed the stream before the reply ended")
		}
		switch {
		case line == "":
			if len(data) == 0 {
				continue
			}
			payload := strings.Join(data, "\n")
			data = data[:0]
			if payload == "[DONE]" {
				if r.finish == "" {
					return broken(e.base, "ended the stream without a finish reason")
				}
				return r.done()
			}
			if err := r.chunk(e.base, payload); err != nil {
				return err
			}
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		case strings.HasPrefix(line, ":"), strings.HasPrefix(line, "event:"), strings.HasPrefix(line, "id:"), strings.HasPrefix(line, "retry:"):
			// comments (keep-alives) and fields this relay has no use for
		default:
			return broken(e.base, fmt.Sprintf("sent a malformed event stream line %.80q", line))
		}
	}
}

// readLine is the next line without its end (LF or CRLF).
func readLine(r *bufio.Reader) (string, error) {
	var b []byte
	for {
		part, more, err := r.ReadLine()
		if err != nil {
			return "", err
		}
		if b = append(b, part...); len(b) > maxLine {
			return "", fmt.Errorf("an event stream line over %d bytes", maxLine)
		}
		if !more {
			return string(b), nil
		}
	}
}

// relay turns upstream chunks into events.
type relay struct {
	emit   func(llm.Event) error
	opened map[int]bool // the tool calls whose opening delta was relayed
	finish string
	usage  llm.Usage
	tokens int // the completion tokens relayed, counted a chunk a token where logprobs do not say
}

// chunk relays one chunk's deltas, keeping its finish reason and usage for done.
func (r *relay) chunk(base, payload string) error {
	var c wireChunk
	if err := json.Unmarshal([]byte(payload), &c); err != nil {
		return broken(base, fmt.Sprintf("sent a malformed chunk: %v", err))
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return broken(base, "failed mid-stream: "+errorText(c.Error))
	}
	if c.Usage != nil {
		r.usage = llm.Usage{PromptTokens: c.Usage.PromptTokens, CompletionTokens: c.Usage.CompletionTokens,
			CachedTokens: c.Usage.PromptTokensDetails.CachedTokens}
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // the request asked for one choice
		}
		ev := llm.Event{Text: ch.Text + ch.Delta.Content, Reasoning: ch.Delta.ReasoningContent + ch.Delta.Reasoning,
			Logprobs: logprobsOf(ch.Logprobs)}
		for _, tc := range ch.Delta.ToolCalls {
			d := llm.ToolCallDelta{Index: tc.Index, Arguments: tc.Function.Arguments}
			if !r.opened[tc.Index] {
				r.opened[tc.Index] = true
				d.ID, d.Name = tc.ID, tc.Function.Name
				if d.ID == "" {
					d.ID = fmt.Sprintf("call_%024d", tc.Index) // an upstream that names no call
				}
			}
			ev.ToolCalls = append(ev.ToolCalls, d)
		}
		if ev.Text != "" || ev.Reasoning != "" || len(ev.ToolCalls) > 0 || len(ev.Logprobs) > 0 {
			ev.Tokens = max(1, len(ev.Logprobs)) // a chunk is about a token; Done's usage is exact
			r.tokens += ev.Tokens
			if err := r.emit(ev); err != nil {
				return err
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			r.finish = *ch.FinishReason
		}
	}
	return nil
}

// done relays the Done of a finished reply.
func (r *relay) done() error {
	finish := r.finish
	if finish == "function_call" {
		finish = llm.FinishToolCalls
	}
	usage := r.usage
	if usage.CompletionTokens == 0 {
		// An upstream that ignores stream_options sends no usage: the relayed chunks are the
		// best count there is.
		usage.CompletionTokens = r.tokens
	}
	return r.emit(llm.Event{Done: &llm.Done{FinishReason: finish, Usage: usage}})
}

// errorText is the message of an error object (or string) an upstream sent.
func errorText(raw json.RawMessage) string {
	var obj struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Message != "" {
		return obj.Message
	}
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return s
	}
	return string(raw)
}
