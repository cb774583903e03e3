package ollama

import (
	"cmp"
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
)

// turn is what both generation routes share once the request is valid.
type turn struct {
	name   string // the model as the client named it, echoed in replies
	model  *core.Model
	stream bool
	start  time.Time
	load   time.Duration
	think  think
	// release lets go of the model begin held (see end).
	release func(keepAlive *time.Duration)
}

func (h *handlers) generate(c *gin.Context) error {
	start := time.Now()
	var req generateRequest
	if err := decode(c.Request, &req); err != nil {
		return err
	}
	m, err := h.servedModel(c.Request.Context(), req.Model)
	if err != nil {
		return err
	}
	req.Model = cmp.Or(req.Model, m.ID) // the reply names the model the router picked
	switch {
	case req.Template != "":
		return badRequest("custom templates are not supported; remove template (the model's own chat template is used)")
	case req.Raw && (req.System != "" || len(req.Context) > 0):
		return badRequest("raw mode does not support template, system, or context")
	case req.Suffix != "" && m.FIM == nil:
		return unsupported(req.Model, "insert", "remove suffix, or use a code model trained for fill-in-the-middle")
	case req.Suffix != "" && req.System != "":
		return badRequest("system does not apply to insert (suffix); remove system")
	case len(req.Images) > 0 && req.Raw:
		return badRequest("raw mode does not take images (no template places them); remove raw, or the images")
	case len(req.Images) > 0 && req.Suffix != "":
		return badRequest("insert (suffix) does not take images; remove suffix, or the images")
	}
	images, err := imageParts("images", req.Images)
	if err != nil {
		return err
	}
	if choice, err := toolChoice(req.Options["tool_choice"]); err != nil {
		return err
	} else if choice.Mode == core.ToolRequired || choice.Mode == core.ToolFunction {
		return badRequest(`option "tool_choice" %q needs tools, which /api/generate does not take; send the tools to /api/chat`, cmp.Or(choice.Name, choice.Mode))
	}
	s, err := h.settle(c.Request.Context(), req.Model, m, shared{format: req.Format, options: req.Options, think: req.Think, keepAlive: req.KeepAlive,
		logprobs: req.Logprobs, topLogprobs: req.TopLogprobs, speculative: req.Speculative, lora: req.Lora})
	if err != nil {
		return err
	}
	if req.Prompt == "" {
		// Ollama's load call: an explicit load, which retries a failed one at once.
		reason, err := h.loadOnly(c.Request.Context(), m, s.keepAlive, true)
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
	defer t.end(s.keepAlive)
	t.think = s.think
	frame := func(p piece) any {
		return generateResponse{Model: t.name, CreatedAt: now(), Response: p.text, Thinking: p.thinking, Done: p.done != nil,
			DoneReason: reason(p.done), metrics: t.metrics(p.done), Logprobs: p.logprobs, Superfluid: p.extra()}
	}
	id, gen, ka := newID(), s.gen, s.keepAlive
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
	msgs = append(msgs, chat.Message{Role: "user", Content: req.Prompt, Media: images})
	creq := &core.ChatRequest{ID: id, Endpoint: "/api/generate", Stream: t.stream, Model: m.ID, Messages: msgs,
		TemplateKwargs: s.kwargs, Generation: *gen, KeepAlive: ka}
	return h.respond(c, t, frame, func(emit core.Emit) (*core.Result, error) { return h.svc.Chat(c.Request.Context(), creq, emit) })
}

func (h *handlers) chat(c *gin.Context) error {
	start := time.Now()
	var req chatRequest
	if err := decode(c.Request, &req); err != nil {
		return err
	}
	m, err := h.servedModel(c.Request.Context(), req.Model)
	if err != nil {
		return err
	}
	req.Model = cmp.Or(req.Model, m.ID) // the reply names the model the router picked
	msgs, err := toMessages(req.Messages)
	if err != nil {
		return err
	}
	tools, err := toTools(req.Tools)
	if err != nil {
		return err
	}
	choice, err := toolChoice(req.Options["tool_choice"])
	if err != nil {
		return err
	}
	parallel, err := parallelCalls(req.Options["parallel_tool_calls"])
	if err != nil {
		return err
	}
	s, err := h.settle(c.Request.Context(), req.Model, m, shared{format: req.Format, options: req.Options, think: req.Think, keepAlive: req.KeepAlive,
		logprobs: req.Logprobs, topLogprobs: req.TopLogprobs, speculative: req.Speculative, lora: req.Lora})
	if err != nil {
		return err
	}
	if len(msgs) == 0 {
		reason, err := h.loadOnly(c.Request.Context(), m, s.keepAlive, false)
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
	defer t.end(s.keepAlive)
	t.think = s.think
	frame := func(p piece) any {
		return chatResponse{Model: t.name, CreatedAt: now(),
			Message: replyMessage{Role: "assistant", Content: p.text, Thinking: p.thinking, ToolCalls: p.calls},
			Done:    p.done != nil, DoneReason: reason(p.done), metrics: t.metrics(p.done), Logprobs: p.logprobs, Superfluid: p.extra()}
	}
	creq := &core.ChatRequest{ID: newID(), Endpoint: "/api/chat", Stream: t.stream, Model: m.ID, Messages: msgs,
		TemplateKwargs: s.kwargs, Generation: *s.gen, KeepAlive: s.keepAlive, Tools: tools, ToolChoice: choice, ParallelToolCalls: parallel}
	return h.respond(c, t, frame, func(emit core.Emit) (*core.Result, error) { return h.svc.Chat(c.Request.Context(), creq, emit) })
}

// roles are the roles Ollama's chat takes (it lower-cases them first, and so does this).
var roles = map[string]bool{"system": true, "user": true, "assistant": true, "tool": true}

func toMessages(in []message) ([]chat.Message, error) {
	out := make([]chat.Message, 0, len(in))
	for i, m := range in {
		role := strings.ToLower(m.Role)
		if !roles[role] {
			return nil, badRequest("messages[%d].role is %q; use one of system, user, assistant, tool", i, m.Role)
		}
		images, err := imageParts(fmt.Sprintf("messages[%d].images", i), m.Images)
		if err != nil {
			return nil, err
		}
		calls, err := toCalls(i, m.ToolCalls)
		if err != nil {
			return nil, err
		}
		out = append(out, chat.Message{Role: role, Content: m.Content, Name: m.ToolName, ToolCallID: m.ToolCallID,
			ToolCalls: calls, Reasoning: m.Thinking, Media: images})
	}
	pairResults(out)
	return out, nil
}

// shared are the request fields both generation routes take.
type shared struct {
	format, think, keepAlive json.RawMessage
	speculative, lora        json.RawMessage // top level; options may hold them too
	options                  map[string]json.RawMessage
	logprobs                 bool
	topLogprobs              int
}

// settings are what the shared fields ask for.
type settings struct {
	gen       *llm.Request
	keepAlive *time.Duration // nil: the server's default
	kwargs    map[string]any // chat template variables (think)
	think     think
}

// settle validates the shared fields of a request for model m (named name by the client).
// keep_alive 0 unloads the model, so it needs an admin key once keys exist.
func (h *handlers) settle(ctx context.Context, name string, m *core.Model, in shared) (*settings, error) {
	s := &settings{gen: &llm.Request{}}
	if err := applyFormat(in.format, s.gen); err != nil {
		return nil, err
	}
	if err := applyOptions(in.options, s.gen); err != nil {
		return nil, err
	}
	if err := setLogprobs(in.logprobs, in.topLogprobs, s.gen); err != nil {
		return nil, err
	}
	var err error
	if s.gen.Speculative, err = speculative(in.speculative, in.options["speculative"]); err != nil {
		return nil, err
	}
	if s.gen.Adapters, err = adapters(in.lora, in.options["lora"]); err != nil {
		return nil, err
	}
	if s.think, err = parseThink(in.think); err != nil {
		return nil, err
	}
	if s.kwargs, err = s.think.kwargs(m, name); err != nil {
		return nil, err
	}
	if s.keepAlive, err = keepAlive(in.keepAlive); err != nil {
		return nil, err
	}
	if err := h.svc.CheckKeepAlive(ctx, s.keepAlive); err != nil {
		return nil, err
	}
	return s, nil
}

// loadOnly answers a request with nothing to generate, as Ollama's clients use it: keep_alive 0
// unloads the model (done_reason "unload", without loading it first); anything else loads it
// and starts the keep-alive the request asked for ("load"). An explicit load (/api/generate's
// empty prompt, Ollama's load call) retries a failed load at once; any other waits out the
// failed load's backoff, getting the remembered failure meanwhile.
func (h *handlers) loadOnly(ctx context.Context, m *core.Model, ka *time.Duration, explicit bool) (string, error) {
	if ka != nil && *ka == 0 {
		_, err := h.svc.UnloadModel(ctx, m.ID)
		return "unload", err
	}
	a, lazy := m.Engine.(acquirer)
	if explicit || !lazy {
		if _, err := h.svc.LoadModel(ctx, m.ID); err != nil {
			return "", err
		}
		if ka == nil || !lazy {
			return "load", nil // the load itself started the default keep-alive
		}
	}
	// The core's load always starts the default keep-alive; the catalog's engine sets another
	// one when a request on it ends, so an empty request on the loaded model sets this one.
	_, release, err := a.Acquire(ctx)
	if err != nil {
		return "", err
	}
	release(ka)
	return "load", nil
}

// acquirer is an engine that loads its model on demand and takes a keep-alive when a request
// on it ends (a catalog model's engine).
type acquirer interface {
	Acquire(ctx context.Context) (llm.Engine, func(keepAlive *time.Duration), error)
}
