package openai

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/batches"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/ratelimit"
	"github.com/superfluid/superfluid/server/sse"
)

// WarmHeader carries the prompt tokens served from the prefix cache.
const WarmHeader = "x-superfluid-warm"

const fingerprint = "superfluid"

// Options tune the dialect.
type Options struct {
	// KeepAlive is the interval of SSE comment keep-alives; 0 disables them.
	KeepAlive time.Duration
	// WriteTimeout bounds the write of each SSE frame (0: no bound); a client that stops
	// reading for longer is dropped and its generation stopped.
	WriteTimeout time.Duration
	// CompletionBurst and CompletionRate are the per-client fill-in-the-middle token bucket
	// (--completion-burst, --completion-rate per second); a burst of 0 disables it.
	CompletionBurst int
	CompletionRate  float64
	// CompletionDeadline cuts fill-in-the-middle generations (--completion-deadline-ms); 0 = none.
	CompletionDeadline time.Duration
	// AnthropicModels and AnthropicModel answer GET /v1/models and /v1/models/{model} for an
	// Anthropic client (AnthropicClient), in that dialect's shape; nil: OpenAI's for everyone.
	AnthropicModels, AnthropicModel gin.HandlerFunc
	AnthropicClient                 func(*http.Request) bool
	// Batches serves /v1/files and /v1/batches; nil keeps no files (uploads are refused).
	Batches *batches.Service
}

type handlers struct {
	svc   *core.Service
	files *batches.Service // the Files and Batches APIs (files.go, batches.go)
	opts  Options
	fim   *ratelimit.Buckets
}

// Routes registers the OpenAI routes on r.
func Routes(r gin.IRouter, svc *core.Service, opts Options) {
	h := &handlers{svc: svc, files: opts.Batches, opts: opts, fim: ratelimit.New(opts.CompletionBurst, opts.CompletionRate)}
	if h.files == nil {
		h.files = batches.New(batches.Config{}, svc, nil) // keeps no files: uploads are refused
	}
	r.POST("/v1/completions", Handle(h.completions))
	r.POST("/v1/chat/completions", Handle(h.chatCompletions))
	r.GET("/v1/models", Handle(h.listModels))
	r.GET("/v1/models/*model", Handle(h.getModel))
	r.POST("/v1/models/load", Handle(h.loadModel))
	r.POST("/v1/models/unload", Handle(h.unloadModel))
	r.DELETE("/v1/models/*model", Handle(h.deleteModel))
	r.POST("/v1/tokenize", Handle(h.tokenize))
	h.routesResponses(r)
	h.routesFiles(r)
	h.routesBatches(r)
	h.routesEmbeddings(r)
	h.routesLlamaCpp(r)
}

func newID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

func (h *handlers) chatCompletions(c *gin.Context) error {
	var req chatRequest
	if err := decode(c.Request, &req); err != nil {
		return err
	}
	creq, err := toCore(&req, h.svc.ModelOptional())
	if err != nil {
		return err
	}
	if err := h.svc.CheckKeepAlive(c.Request.Context(), creq.KeepAlive); err != nil {
		return err // keep_alive 0 unloads the model: an admin key's call once keys exist
	}
	if req.Stream {
		opts := streamOptions{}
		if req.StreamOptions != nil {
			opts = *req.StreamOptions
		}
		return h.streamChat(c, creq, opts)
	}
	replies := make([]core.Reply, max(1, creq.N))
	res, err := h.svc.Chat(c.Request.Context(), creq, func(i int, ev llm.Event) error {
		replies[i].Add(ev)
		return nil
	})
	if err != nil {
		return err
	}
	reply := chatCompletion{
		ID: creq.ID, Object: "chat.completion", Created: time.Now().Unix(), Model: res.Model.ID,
		SystemFingerprint: fingerprint, Usage: toUsage(res.Usage()),
	}
	var warnings []string
	for i, d := range res.Choices {
		r := &replies[i]
		msg := replyMessage{Role: "assistant", ReasoningContent: r.Reasoning(), ToolCalls: fromCalls(r.ToolCalls)}
		if text := r.Content(); text != "" || len(r.ToolCalls) == 0 {
			msg.Content = &text // null beside tool calls, as OpenAI sends it
		}
		reply.Choices = append(reply.Choices, choice{
			Index: i, Message: msg, Logprobs: fromLogprobs(r.Logprobs, creq.Generation.Logprobs), FinishReason: d.FinishReason,
		})
		if d.Warning != "" {
			warnings = append(warnings, d.Warning)
		}
	}
	if warnings != nil {
		reply.Superfluid = &replyExtra{Warnings: warnings}
	}
	reply.Superfluid = withSpec(reply.Superfluid, res.Choices...)
	c.Header(WarmHeader, strconv.Itoa(res.Usage().CachedTokens))
	c.JSON(http.StatusOK, reply)
	return nil
}

func toUsage(u llm.Usage) usage {
	return usage{
		PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens,
		PromptTokensDetails: &tokenDetails{CachedTokens: u.CachedTokens},
	}
}

func (h *handlers) streamChat(c *gin.Context, creq *core.ChatRequest, opts streamOptions) error {
	s := sse.New(c.Writer, h.opts.KeepAlive, h.opts.WriteTimeout)
	defer s.Close()
	base := chunk{ID: creq.ID, Object: "chat.completion.chunk", Created: time.Now().Unix(), Model: creq.Model, SystemFingerprint: fingerprint}
	frame := func(d delta, finish *string) chunk {
		ch := base
		ch.Choices = []chunkChoice{{Index: 0, Delta: d, FinishReason: finish}}
		return ch
	}
	var prompt, completion int
	// sendPieces writes the reasoning, content, calls and logprobs an event carries, if any.
	sendPieces := func(ev llm.Event) error {
		d := delta{ReasoningContent: ev.Reasoning, ToolCalls: fromDeltas(ev.ToolCalls)}
		if ev.Text != "" {
			d.Content = &ev.Text
		}
		if d.Content == nil && d.ReasoningContent == "" && len(d.ToolCalls) == 0 && len(ev.Logprobs) == 0 {
			return nil
		}
		ch := frame(d, nil)
		ch.Choices[0].Logprobs = fromLogprobs(ev.Logprobs, creq.Generation.Logprobs && len(ev.Logprobs) > 0)
		if opts.ContinuousUsageStats {
			ch.Usage = &usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
		}
		return s.Data(ch)
	}
	_, err := h.svc.Chat(c.Request.Context(), creq, func(_ int, ev llm.Event) error {
		switch {
		case ev.Started != nil:
			prompt = ev.Started.PromptTokens
			s.SetHeader(WarmHeader, strconv.Itoa(ev.Started.CachedTokens))
			return s.Data(frame(delta{Role: "assistant"}, nil))
		case ev.Done != nil:
			// The last pieces (held text, a call completed by the end) come with Done.
			if err := sendPieces(ev); err != nil {
				return err
			}
			reason := ev.Done.FinishReason
			last := frame(delta{}, &reason)
			u := toUsage(ev.Done.Usage)
			last.Usage, last.Superfluid = &u, &chunkExtra{Warm: ev.Done.Usage.CachedTokens}
			if ev.Done.Warning != "" {
				last.Superfluid.Warnings = []string{ev.Done.Warning}
			}
			last.Superfluid.Spec = core.SpecReportOf(*ev.Done)
			return s.Data(last)
		default:
			completion += ev.Tokens
			return sendPieces(ev)
		}
	})
	return endStream(s, err)
}

// endStream finishes an OpenAI SSE stream. An error before anything was sent is returned, to
// be rendered with its own status; once the stream has begun it travels as a data frame. The
// stream always ends with the terminator.
func endStream(s *sse.Stream, err error) error {
	if err != nil {
		if !s.Settle() {
			return err
		}
		_ = s.Data(toError(err).wire())
	}
	_ = s.Done()
	return nil
}

// toCore validates the request and converts it to the core's form; modelOptional lets the model
// field be empty (team mode: needsModel).
func toCore(req *chatRequest, modelOptional bool) (*core.ChatRequest, error) {
	if needsModel(&req.Model, modelOptional) {
		return nil, invalid("model", "you must provide a model parameter; GET /v1/models lists the served models")
	}
	if len(req.Messages) == 0 {
		return nil, invalid("messages", "messages must be a non-empty array of {role, content} objects")
	}
	msgs, err := toMessages(req.Messages)
	if err != nil {
		return nil, err
	}
	gen, err := toGeneration(req)
	if err != nil {
		return nil, err
	}
	n := 1
	if req.N != nil {
		if *req.N < 1 || *req.N > 128 {
			return nil, invalid("n", fmt.Sprintf("n must be between 1 and 128, got %d", *req.N))
		}
		n = *req.N
	}
	if req.Stream {
		n = 1 // streaming serves one choice
	}
	kwargs := req.ChatTemplateKwargs
	if req.EnableThinking != nil {
		kwargs = withKwarg(kwargs, "enable_thinking", *req.EnableThinking)
	}
	if req.ReasoningEffort != nil {
		kwargs = withKwarg(kwargs, "reasoning_effort", *req.ReasoningEffort)
	}
	tools, err := toTools(req.Tools)
	if err != nil {
		return nil, err
	}
	choice, err := toToolChoice(req.ToolChoice)
	if err != nil {
		return nil, err
	}
	keepAlive, err := keepAlive(req.KeepAlive)
	if err != nil {
		return nil, err
	}
	return &core.ChatRequest{
		ID: newID("chatcmpl-"), Endpoint: "/v1/chat/completions", Stream: req.Stream, Model: *req.Model,
		Messages: msgs, TemplateKwargs: kwargs, Generation: *gen, N: n, KeepAlive: keepAlive,
		Tools: tools, ToolChoice: choice, ParallelToolCalls: req.ParallelToolCalls,
	}, nil
}

// withKwarg sets a chat template variable from a top-level shorthand (enable_thinking,
// reasoning_effort) unless chat_template_kwargs sets it: the explicit kwarg wins.
func withKwarg(kwargs map[string]any, key string, v any) map[string]any {
	if kwargs == nil {
		kwargs = map[string]any{}
	}
	if _, set := kwargs[key]; !set {
		kwargs[key] = v
	}
	return kwargs
}

var roles = map[string]string{"system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "tool"}

func toMessages(in []message) ([]chat.Message, error) {
	out := make([]chat.Message, 0, len(in))
	for i, m := range in {
		role, ok := roles[m.Role]
		if !ok {
			return nil, invalid(fmt.Sprintf("messages[%d].role", i),
				fmt.Sprintf("messages[%d].role is %q; use one of system, developer, user, assistant, tool", i, m.Role))
		}
		media, err := chatMedia(i, m.Role, &m.Content)
		if err != nil {
			return nil, err
		}
		calls, err := toCalls(i, m.ToolCalls)
		if err != nil {
			return nil, err
		}
		out = append(out, chat.Message{Role: role, Content: m.Content.Text, Name: m.Name, ToolCallID: m.ToolCallID,
			ToolCalls: calls, Reasoning: m.ReasoningContent, Media: media})
	}
	return out, nil
}
