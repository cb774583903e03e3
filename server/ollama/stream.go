package ollama

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/sse"
)

// begin loads the model (timing it for load_duration) and settles streaming: on unless the
// request says "stream": false. The load is not an explicit one: while a failed load's backoff
// runs the request gets the remembered failure, so a client retrying a broken model does not
// start a worker each time. The model stays held until end, so that what load_duration timed
// is what the reply runs on.
func (h *handlers) begin(c *gin.Context, name string, m *core.Model, stream *bool, start time.Time) (*turn, error) {
	loadStart := time.Now()
	release, err := h.hold(c.Request.Context(), m)
	if err != nil {
		return nil, err
	}
	return &turn{name: name, model: m, stream: stream == nil || *stream, start: start, load: time.Since(loadStart), release: release}, nil
}

// end lets go of the model begin held, with the request's keep-alive (nil: the default).
func (t *turn) end(keepAlive *time.Duration) {
	if t.release != nil {
		t.release(keepAlive)
	}
}

// hold loads m on demand, as a request does (waiting out a failed load's backoff), and keeps it
// loaded until release. A model outside the catalog has no on-demand load: it is started.
func (h *handlers) hold(ctx context.Context, m *core.Model) (release func(keepAlive *time.Duration), err error) {
	a, ok := m.Engine.(acquirer)
	if !ok {
		if _, err := h.svc.LoadModel(ctx, m.ID); err != nil {
			return nil, err
		}
		return func(*time.Duration) {}, nil
	}
	_, release, err = a.Acquire(ctx)
	return release, err
}

// metrics are the final line's counts and timings; nil done (a text line) has none.
// prompt_eval_count is the prompt tokens actually evaluated: the prefix cache's part is left out.
func (t *turn) metrics(done *llm.Done) metrics {
	if done == nil {
		return metrics{}
	}
	u, tm := done.Usage, done.Timings
	return metrics{
		TotalDuration: time.Since(t.start), LoadDuration: t.load,
		PromptEvalCount: max(u.PromptTokens-u.CachedTokens, 0), PromptEvalDuration: tm.Prefill,
		EvalCount: u.CompletionTokens, EvalDuration: tm.Decode,
	}
}

// thinking is the reasoning the reply serves: none when think was false.
func (t *turn) thinking(reasoning string) string {
	if t.think.dropsThinking() {
		return ""
	}
	return reasoning
}

// reason is done_reason: "stop" or "length". A reply that made tool calls is "stop", as
// Ollama reports it (the core's "tool_calls" is OpenAI's word).
func reason(done *llm.Done) string {
	switch {
	case done == nil:
		return ""
	case done.FinishReason == llm.FinishToolCalls:
		return llm.FinishStop
	default:
		return done.FinishReason
	}
}

// piece is what one reply line (or the whole reply) carries: text, reasoning, complete tool
// calls and logprobs, and for the last line Done and the warnings.
type piece struct {
	text, thinking string
	calls          []toolCall
	logprobs       []logprob
	done           *llm.Done
	warnings       []string
}

// extra is the line's superfluid extension object (warnings; on the last line, what
// speculative decoding did); nil when it has nothing to say.
func (p *piece) extra() *extra {
	var spec *core.SpecReport
	if p.done != nil {
		spec = core.SpecReportOf(*p.done)
	}
	if len(p.warnings) == 0 && spec == nil {
		return nil
	}
	return &extra{Warnings: p.warnings, Spec: spec}
}

// warn adds the non-empty warnings.
func (p *piece) warn(ws ...string) {
	for _, w := range ws {
		if w != "" {
			p.warnings = append(p.warnings, w)
		}
	}
}

// respond runs call and writes its events: NDJSON lines as they come when streaming, else one
// JSON object with the whole reply. frame builds a route's line from a piece.
//
// Streaming follows Ollama: content and thinking at token cadence (with the logprobs of the
// tokens they cover; a line of logprobs alone while text is held back), each tool call in a
// line of its own once complete, and a last line with done, done_reason and the metrics.
func (h *handlers) respond(c *gin.Context, t *turn, frame func(piece) any, call func(core.Emit) (*core.Result, error)) error {
	if !t.stream {
		var r core.Reply
		res, err := call(func(_ int, ev llm.Event) error {
			r.Add(ev)
			return nil
		})
		if err != nil {
			return err
		}
		p := piece{text: r.Content(), thinking: t.thinking(r.Reasoning()), calls: fromCalls(r.ToolCalls), logprobs: fromLogprobs(r.Logprobs), done: &res.Choices[0]}
		p.warn(res.Choices[0].Warning)
		c.JSON(http.StatusOK, frame(p))
		return nil
	}
	out := &ndjson{w: c.Writer, timeout: h.opts.WriteTimeout}
	var calls callStream
	_, err := call(func(_ int, ev llm.Event) error {
		if ev.Started != nil {
			return nil
		}
		// The Done event may carry the last pieces too (held text, a call completed by the end):
		// they go out in lines of their own before the last line, which carries no content.
		p := piece{text: ev.Text, thinking: t.thinking(ev.Reasoning), logprobs: fromLogprobs(ev.Logprobs)}
		if p.text != "" || p.thinking != "" || len(p.logprobs) > 0 {
			if err := out.line(frame(p)); err != nil {
				return err
			}
		}
		done := calls.add(ev.ToolCalls)
		if ev.Done != nil {
			done = append(done, calls.rest()...)
		}
		if len(done) > 0 {
			if err := out.line(frame(piece{calls: done})); err != nil {
				return err
			}
		}
		if ev.Done == nil {
			return nil
		}
		last := piece{done: ev.Done}
		last.warn(ev.Done.Warning)
		return out.line(frame(last))
	})
	if err != nil {
		if !out.committed {
			return err // nothing sent yet: a proper status
		}
		_ = out.line(errorBody{Error: toError(err).Message}) // the stream has begun: a last error line
	}
	return nil
}

// ndjson writes one JSON object per line, committing the 200 and headers with the first line
// so that errors found before it still get their status.
// Each line must reach the connection within timeout (0: no bound), as SSE frames must.
type ndjson struct {
	w         gin.ResponseWriter
	timeout   time.Duration
	committed bool
	err       error
}

func (s *ndjson) line(v any) error {
	if s.err != nil {
		return s.err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if !s.committed {
		s.committed = true
		s.w.Header().Set("Content-Type", "application/x-ndjson")
		s.w.WriteHeader(http.StatusOK)
	}
	if err := sse.WriteFrame(s.w, s.timeout, append(b, '\n')); err != nil {
		s.err = err
		return err
	}
	return nil
}

// now is a reply's created_at: UTC, written as RFC 3339 with nanoseconds.
func now() time.Time { return time.Now().UTC() }
