package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestRequestEngineChat: a chat on a request engine's model reaches the engine typed, once per
// choice, with what the core settles (the default cap, each choice's seed) and nothing it
// would do for a prompt (no prompt, the response format's schema as the client gave it rather
// than a grammar); the engine's events come back unshaped and the request is recorded with the
// engine's usage.
func TestRequestEngineChat(t *testing.T) {
	echo := &servertest.Echo{}
	st := servertest.Store(t)
	svc := core.New(core.Config{MaxTokens: 99}, st, servertest.EchoModel("echo", echo))
	schema := json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string","pattern":"^(a|b)+$"}}}`)
	req := &core.ChatRequest{
		ID: "chatcmpl-echo", Endpoint: "/v1/chat/completions", Model: "echo", N: 2,
		Messages:   []chat.Message{{Role: "user", Content: "hi"}},
		Tools:      []chat.Tool{{Name: "now", Parameters: json.RawMessage(`{"type":"object"}`)}},
		ToolChoice: core.ToolChoice{Mode: core.ToolRequired},
		Generation: llm.Request{Sampling: llm.Sampling{Seed: 7}, Format: llm.FormatSchema, Schema: schema},
	}
	texts := make([]strings.Builder, 2)
	calls := make([]int, 2)
	res, err := svc.Chat(context.Background(), req, func(i int, ev llm.Event) error {
		texts[i].WriteString(ev.Text)
		calls[i] += len(ev.ToolCalls)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	chats := echo.Chats()
	if len(chats) != 2 {
		t.Fatalf("the engine got %d requests, want one per choice", len(chats))
	}
	seeds := map[uint64]bool{}
	for _, c := range chats {
		g := c.Generation
		seeds[g.Sampling.Seed] = true
		if c.N != 1 || g.MaxTokens != 99 || g.Prompt != "" || g.Format != llm.FormatSchema || string(g.Schema) != string(schema) || c.ToolChoice.Mode != core.ToolRequired {
			t.Errorf("engine got n %d, max tokens %d, prompt %q, format %q %s, tool choice %q", c.N, g.MaxTokens, g.Prompt, g.Format, g.Schema, c.ToolChoice.Mode)
		}
	}
	if !seeds[7] || !seeds[8] {
		t.Errorf("seeds %v, want 7 and 8", seeds)
	}
	for i := range texts {
		var echoed servertest.Echoed
		if err := json.Unmarshal([]byte(texts[i].String()), &echoed); err != nil || calls[i] != 2 {
			t.Errorf("choice %d: text %q (%v), %d call deltas", i, texts[i].String(), err, calls[i])
		}
	}
	if u := res.Usage(); u.PromptTokens != 1 || u.CompletionTokens != 8 || res.Choices[0].FinishReason != llm.FinishToolCalls {
		t.Errorf("usage %+v, finish %q", u, res.Choices[0].FinishReason)
	}
	if err := st.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs, err := st.RecentRequests(context.Background(), 10)
	if err != nil || len(recs) != 1 {
		t.Fatalf("%d records (%v)", len(recs), err)
	}
	if r := recs[0]; r.ID != "chatcmpl-echo" || r.Model != "echo" || r.Status != 200 || r.PromptTokens != 1 || r.CompletionTokens != 8 || r.FinishReason != llm.FinishToolCalls {
		t.Errorf("record %+v", r)
	}
}

// TestRequestEngineComplete: a completion reaches the engine with its prompt as the client
// gave it.
func TestRequestEngineComplete(t *testing.T) {
	echo := &servertest.Echo{}
	svc := core.New(core.Config{}, nil, servertest.EchoModel("echo", echo))
	var text strings.Builder
	_, err := svc.Complete(context.Background(), &core.CompletionRequest{Model: "echo", Generation: llm.Request{Prompt: "Once upon", MaxTokens: 5}},
		func(_ int, ev llm.Event) error { text.WriteString(ev.Text); return nil })
	if err != nil {
		t.Fatal(err)
	}
	got := echo.Completions()
	if len(got) != 1 || got[0].Generation.Prompt != "Once upon" || got[0].Generation.MaxTokens != 5 {
		t.Fatalf("engine got %+v", got)
	}
	var echoed servertest.Echoed
	if err := json.Unmarshal([]byte(text.String()), &echoed); err != nil || echoed.Prompt != "Once upon" {
		t.Errorf("reply %q (%v)", text.String(), err)
	}
}

// TestRequestEngineEmbed: embeddings and rerank on a request engine's embedding model reach
// the engine as typed embedding requests; the core still checks the vectors and ranks them.
func TestRequestEngineEmbed(t *testing.T) {
	echo := &servertest.Echo{}
	m := servertest.EchoModel("echo", echo)
	m.EmbeddingFacts = &llm.Embedding{Pooling: llm.PoolingMean, Length: 2}
	svc := core.New(core.Config{}, nil, m)
	res, err := svc.Embed(context.Background(), &core.EmbedRequest{Model: "echo", Inputs: []llm.EmbedInput{{Text: "one two"}, {Text: "three"}}, Dimensions: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Vectors) != 2 || res.Vectors[0][1] != 2 || res.PromptTokens != 3 {
		t.Errorf("vectors %v, %d prompt tokens", res.Vectors, res.PromptTokens)
	}
	if got := echo.Embeds(); len(got) != 1 || got[0].Dimensions != 2 || len(got[0].Inputs) != 2 {
		t.Errorf("engine got %+v", got)
	}
	ranked, err := svc.Rerank(context.Background(), &core.RerankRequest{Model: "echo", Query: "a b", Documents: []string{"x", "c d"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ranked.Results) != 2 || ranked.Results[0].Index != 1 {
		t.Errorf("ranked %+v, want the two-word document first", ranked.Results)
	}
	if got := echo.Embeds(); len(got) != 2 || len(got[1].Inputs) != 3 || got[1].Inputs[0].Text != "a b" {
		t.Errorf("rerank reached the engine as %+v", got[len(got)-1])
	}
}

// doneless is a request engine whose replies end without a Done event.
type doneless struct{ servertest.Echo }

func (*doneless) Chat(_ context.Context, _ *core.ChatRequest, emit func(llm.Event) error) error {
	return emit(llm.Event{Text: "half a reply", Tokens: 1})
}

// TestRequestEngineWithoutDone: a request engine that ends a reply without its Done event
// (no finish reason, no usage) fails the request as an engine failure, rather than serve the
// reply as if it were complete.
func TestRequestEngineWithoutDone(t *testing.T) {
	engine := &doneless{}
	m := servertest.EchoModel("doneless", &engine.Echo)
	m.Requests = engine
	svc := core.New(core.Config{}, nil, m)
	_, err := svc.Chat(context.Background(), &core.ChatRequest{Model: "doneless", Messages: []chat.Message{{Role: "user", Content: "hi"}}},
		func(int, llm.Event) error { return nil })
	if !errors.Is(err, llm.ErrEngineFailure) {
		t.Fatalf("err = %v, want an engine failure", err)
	}
}
