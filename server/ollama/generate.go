package ollama

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/sse"
)

// turn is what both generation routes share once the request is valid.
type turn struct {
	name   string // the model as the client named it, echoed in replies
	model  *core.Model
	stream bool
	start  time.Time
	load   time.Duration
}

func (h *handlers) generate(c *gin.Context) error {
	start := time.Now()
	var req generateRequest
	if err := decode(c.Request, &req); err != nil {
		return err
	}
	m, err := h.model(req.Model)
	if err != nil {
		return err
	}
	switch {
	case req.Template != "":
		return badRequest("custom templates are not supported; remove template (the model's own chat template is used)")
	case req.Raw && (req.System != "" || len(req.Context) > 0):
		return badRequest("raw mode does not support template, system, or context")
	case req.Suffix != "" && m.FIM == nil:
		return unsupported(req.Model, "insert", "remove suffix, or use a code model trained for fill-in-the-middle")
	case req.Suffix != "" && req.System != "":
		return badRequest("system does not apply to insert (suffix); remove system")
	case len(req.Images) > 0:
		return unsupported(req.Model, "images", "remove images (vision is not available on this server yet)")
	case req.Logprobs:
		return badRequest("logprobs are not supported by this server yet; remove logprobs")
	}
	gen, ka, err := generation(req.Model, req.Format, req.Options, req.Think, req.KeepAlive)
	if err != nil {
		return err
	}
	if req.Prompt == "" {
		reason, err := h.loadOnly(c.Request.Context(), m, ka)
		if err != nil {
			return err
		}
		c.JSON(http.StatusOK, generateResponse{Model: req.Model, CreatedAt: now(), Done: true, DoneReason: reason})
		return nil
	}
	t, err := h.begin(c, req.Model, m, req.Stream, start)
	if err != nil {
		return err
	}
	frame := func(text string, done *llm.Done) any {
		return generateResponse{Model: t.name, CreatedAt: now(), Response: text, Done: done != nil, DoneReason: reason(done), metrics: t.metrics(done)}
	}
	id := newID()
	if req.Suffix != "" {
		ireq := &core.InfillRequest{ID: id, Endpoint: "/api/generate", Stream: t.stream, Model: m.ID,
			Prefix: req.Prompt, Suffix: req.Suffix, Mode: core.FIMPrefixSuffixMiddle, Generation: *gen, KeepAlive: ka}
		return h.respond(c, t, frame, func(emit core.Emit) (*core.Result, error) { return h.svc.Infill(c.Request.Context(), ireq, emit) })
	}
	if req.Raw {
		gen.Prompt = req.Prompt
		creq := &core.CompletionRequest{ID: id, Endpoint: "/api/generate", Stream: t.stream, Model: m.ID, Generation: *gen, KeepAlive: ka}
		return h.respond(c, t, frame, func(emit core.Emit) (*core.Result, error) { return h.svc.Complete(c.Request.Context(), creq, emit) })
	}
	var msgs []chat.Message
	if req.System != "" {
		msgs = append(msgs, chat.Message{Role: "system", Content: req.System})
	}
	msgs = append(msgs, chat.Message{Role: "user", Content: req.Prompt})
	creq := &core.ChatRequest{ID: id, Endpoint: "/api/generate", Stream: t.stream, Model: m.ID, Messages: msgs, Generation: *gen, KeepAlive: ka}
	return h.respond(c, t, frame, func(emit core.Emit) (*core.Result, error) { return h.svc.Chat(c.Request.Context(), creq, emit) })
}

func (h *handlers) chat(c *gin.Context) error {
	start := time.Now()
	var req chatRequest
	if err := decode(c.Request, &req); err != nil {
		return err
	}
	m, err := h.model(req.Model)
	if err != nil {
		return err
	}
	if present(req.Tools) {
		return unsupported(req.Model, "tools", "remove tools (tool calling is not available on this server yet)")
	}
	if req.Logprobs {
		return badRequest("logprobs are not supported by this server yet; remove logprobs")
	}
	msgs, err := toMessages(req.Model, req.Messages)
	if err != nil {
		return err
	}
	gen, ka, err := generation(req.Model, req.Format, req.Options, req.Think, req.KeepAlive)
	if err != nil {
		return err
	}
	if len(msgs) == 0 {
		reason, err := h.loadOnly(c.Request.Context(), m, ka)
		if err != nil {
			return err
		}
		c.JSON(http.StatusOK, chatResponse{Model: req.Model, CreatedAt: now(), Message: replyMessage{Role: "assistant"}, Done: true, DoneReason: reason})
		return nil
	}
	t, err := h.begin(c, req.Model, m, req.Stream, start)
	if err != nil {
		return err
	}
	frame := func(text string, done *llm.Done) any {
		return chatResponse{Model: t.name, CreatedAt: now(), Message: replyMessage{Role: "assistant", Content: text},
			Done: done != nil, DoneReason: reason(done), metrics: t.metrics(done)}
	}
	creq := &core.ChatRequest{ID: newID(), Endpoint: "/api/chat", Stream: t.stream, Model: m.ID, Messages: msgs, Generation: *gen, KeepAlive: ka}
	return h.respond(c, t, frame, func(emit core.Emit) (*core.Result, error) { return h.svc.Chat(c.Request.Context(), creq, emit) })
}

// roles are the roles Ollama's chat takes (it lower-cases them first, and so does this).
var roles = map[string]bool{"system": true, "user": true, "assistant": true, "tool": true}

func toMessages(model string, in []message) ([]chat.Message, error) {
	out := make([]chat.Message, 0, len(in))
	for i, m := range in {
		role := strings.ToLower(m.Role)
		if !roles[role] {
			return nil, badRequest("messages[%d].role is %q; use one of system, user, assistant, tool", i, m.Role)
		}
		if len(m.Images) > 0 {
			return nil, unsupported(model, "images", fmt.Sprintf("remove the images from messages[%d] (vision is not available on this server yet)", i))
		}
		if present(m.ToolCalls) {
			return nil, unsupported(model, "tools", fmt.Sprintf("remove tool_calls from messages[%d] (tool calling is not available on this server yet)", i))
		}
		out = append(out, chat.Message{Role: role, Content: m.Content, Name: m.ToolName, ToolCallID: m.ToolCallID})
	}
	return out, nil
}

// generation validates the fields both routes share and builds the engine request and the
// keep-alive (nil: the server's default).
func generation(model string, format json.RawMessage, opts map[string]json.RawMessage, think, rawKeepAlive json.RawMessage) (*llm.Request, *time.Duration, error) {
	gen := &llm.Request{}
	if err := applyFormat(format, gen); err != nil {
		return nil, nil, err
	}
	if err := applyOptions(opts, gen); err != nil {
		return nil, nil, err
	}
	if err := checkThink(think, model); err != nil {
		return nil, nil, err
	}
	ka, err := keepAlive(rawKeepAlive)
	if err != nil {
		return nil, nil, err
	}
	return gen, ka, nil
}

// loadOnly answers a request with nothing to generate, as Ollama's clients use it: keep_alive 0
// unloads the model (done_reason "unload", without loading it first); anything else loads it
// and starts the keep-alive the request asked for ("load").
func (h *handlers) loadOnly(ctx context.Context, m *core.Model, ka *time.Duration) (string, error) {
	if ka != nil && *ka == 0 {
		_, err := h.svc.UnloadModel(ctx, m.ID)
		return "unload", err
	}
	if _, err := h.svc.LoadModel(ctx, m.ID); err != nil {
		return "", err
	}
	if ka == nil {
		return "load", nil // the load itself started the default keep-alive
	}
	// The core's load always starts the default keep-alive; the catalog's engine sets another
	// one when a request on it ends, so an empty request on the loaded model sets this one.
	if a, ok := m.Engine.(acquirer); ok {
		_, release, err := a.Acquire(ctx)
		if err != nil {
			return "", err
		}
		release(ka)
	}
	return "load", nil
}

// acquirer is an engine that loads its model on demand and takes a keep-alive when a request
// on it ends (a catalog model's engine).
type acquirer interface {
	Acquire(ctx context.Context) (llm.Engine, func(keepAlive *time.Duration), error)
}

// begin loads the model (timing it for load_duration) and settles streaming: on unless the
// request says "stream": false.
func (h *handlers) begin(c *gin.Context, name string, m *core.Model, stream *bool, start time.Time) (*turn, error) {
	loadStart := time.Now()
	if _, err := h.svc.LoadModel(c.Request.Context(), m.ID); err != nil {
		return nil, err
	}
	return &turn{name: name, model: m, stream: stream == nil || *stream, start: start, load: time.Since(loadStart)}, nil
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

func reason(done *llm.Done) string {
	if done == nil {
		return ""
	}
	return done.FinishReason // "stop" or "length", Ollama's words too
}

// respond runs call and writes its events: NDJSON lines as they come when streaming, else one
// JSON object with the whole text. frame builds a line from a text piece or the final Done.
func (h *handlers) respond(c *gin.Context, t *turn, frame func(string, *llm.Done) any, call func(core.Emit) (*core.Result, error)) error {
	if !t.stream {
		var text strings.Builder
		res, err := call(func(_ int, ev llm.Event) error {
			text.WriteString(ev.Text)
			return nil
		})
		if err != nil {
			return err
		}
		c.JSON(http.StatusOK, frame(text.String(), &res.Choices[0]))
		return nil
	}
	out := &ndjson{w: c.Writer, timeout: h.opts.WriteTimeout}
	_, err := call(func(_ int, ev llm.Event) error {
		switch {
		case ev.Done != nil:
			return out.line(frame("", ev.Done))
		case ev.Text != "":
			return out.line(frame(ev.Text, nil))
		}
		return nil
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
