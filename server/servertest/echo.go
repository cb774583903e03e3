package servertest

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

// Echo is a chat-level engine (core.RequestEngine) that answers each request with the request
// itself, as it reached the engine typed: its content is the JSON of an Echoed, split in two
// pieces so a stream has more than one delta. Given tools (and a tool choice other than none),
// it also calls the first tool with EchoArguments. Every reply reports usage: a prompt token
// per message (or per prompt byte) and a completion token per piece and per call. Tests use it
// to prove that a dialect's request reaches such an engine typed and that its deltas come back
// in the dialect's shape.
type Echo struct {
	// Caps is what the engine says the model can do (core.CapabilityReporter).
	Caps core.Capabilities

	mu          sync.Mutex
	chats       []core.ChatRequest
	completions []core.CompletionRequest
	embeds      []core.EmbedRequest
}

// EchoCallID is the id of the call Echo makes, in OpenAI's shape ("call_" and 24 hex digits).
const EchoCallID = "call_0123456789abcdef01234567"

// EchoArguments are the arguments of the call Echo makes.
const EchoArguments = `{"echo":true}`

// Echoed is what Echo says it was asked.
type Echoed struct {
	Messages    []EchoedMessage `json:"messages,omitempty"`
	Prompt      string          `json:"prompt,omitempty"`
	Tools       []string        `json:"tools,omitempty"`
	ToolChoice  string          `json:"tool_choice,omitempty"`
	Temperature *float64        `json:"temperature,omitempty"`
	TopP        *float64        `json:"top_p,omitempty"`
	MaxTokens   int             `json:"max_tokens"`
	Stop        []string        `json:"stop,omitempty"`
	Format      string          `json:"format,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
}

// EchoedMessage is one message as Echo got it.
type EchoedMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// EchoModel is a model served by e, named id. Its llm.Engine (the fake engine) answers what is
// asked of the model rather than of a request: its window, lanes and token counts.
func EchoModel(id string, e *Echo) *core.Model {
	tmpl, _ := chat.Parse("")
	return &core.Model{ID: id, Path: "/echo/" + id + ".gguf", Engine: enginetest.New(4096, "unused"), Template: tmpl, Requests: e}
}

// Capabilities is e.Caps: a chat-level engine says what its model can do.
func (e *Echo) Capabilities() core.Capabilities { return e.Caps }

// Chats are the chat requests Echo got, one per choice, in order.
func (e *Echo) Chats() []core.ChatRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]core.ChatRequest(nil), e.chats...)
}

// Completions are the completion requests Echo got, one per choice, in order.
func (e *Echo) Completions() []core.CompletionRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]core.CompletionRequest(nil), e.completions...)
}

// Embeds are the embedding requests Echo got (a rerank's among them), in order.
func (e *Echo) Embeds() []core.EmbedRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]core.EmbedRequest(nil), e.embeds...)
}

// Chat echoes req.
func (e *Echo) Chat(ctx context.Context, req *core.ChatRequest, emit func(llm.Event) error) error {
	e.mu.Lock()
	e.chats = append(e.chats, *req)
	e.mu.Unlock()
	echoed := echoOf(&req.Generation)
	for _, m := range req.Messages {
		echoed.Messages = append(echoed.Messages, EchoedMessage{m.Role, m.Content})
	}
	for _, t := range req.Tools {
		echoed.Tools = append(echoed.Tools, t.Name)
	}
	echoed.ToolChoice = req.ToolChoice.Mode
	call := ""
	if len(req.Tools) > 0 && req.ToolChoice.Mode != core.ToolNone {
		call = req.Tools[0].Name
	}
	return echo(ctx, echoed, len(req.Messages), call, emit)
}

// Complete echoes req.
func (e *Echo) Complete(ctx context.Context, req *core.CompletionRequest, emit func(llm.Event) error) error {
	e.mu.Lock()
	e.completions = append(e.completions, *req)
	e.mu.Unlock()
	echoed := echoOf(&req.Generation)
	echoed.Prompt = req.Generation.Prompt
	return echo(ctx, echoed, len(req.Generation.Prompt), "", emit)
}

// Embed gives each input a vector of its length and its number of words.
func (e *Echo) Embed(_ context.Context, req *core.EmbedRequest) (*llm.EmbedResult, error) {
	e.mu.Lock()
	e.embeds = append(e.embeds, *req)
	e.mu.Unlock()
	r := &llm.EmbedResult{}
	for _, in := range req.Inputs {
		words := len(strings.Fields(in.Text))
		r.Vectors = append(r.Vectors, []float32{float32(len(in.Text)), float32(words)})
		r.Tokens = append(r.Tokens, max(1, words))
	}
	return r, nil
}

func echoOf(gen *llm.Request) Echoed {
	return Echoed{
		Temperature: gen.Sampling.Temperature, TopP: gen.Sampling.TopP, MaxTokens: gen.MaxTokens,
		Stop: gen.Stop, Format: gen.Format, Schema: gen.Schema,
	}
}

// echo streams echoed as two pieces of content, then the call (if any), then Done.
func echo(ctx context.Context, echoed Echoed, promptTokens int, call string, emit func(llm.Event) error) error {
	b, err := json.Marshal(echoed)
	if err != nil {
		return err
	}
	events := []llm.Event{
		{Started: &llm.Started{PromptTokens: promptTokens}},
		{Text: string(b[:len(b)/2]), Tokens: 1},
		{Text: string(b[len(b)/2:]), Tokens: 1},
	}
	done := &llm.Done{FinishReason: llm.FinishStop, Usage: llm.Usage{PromptTokens: promptTokens, CompletionTokens: 2}}
	if call != "" {
		events = append(events,
			llm.Event{ToolCalls: []llm.ToolCallDelta{{Index: 0, ID: EchoCallID, Name: call}}, Tokens: 1},
			llm.Event{ToolCalls: []llm.ToolCallDelta{{Index: 0, Arguments: EchoArguments}}, Tokens: 1})
		done.FinishReason = llm.FinishToolCalls
		done.Usage.CompletionTokens += 2
	}
	events = append(events, llm.Event{Done: done})
	for _, ev := range events {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := emit(ev); err != nil {
			return err
		}
	}
	return nil
}
