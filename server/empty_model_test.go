package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/ollama/ollama/api"
	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestEmptyModelRoutes: in team mode an empty model field picks the caller's booked lane, else a
// free one (the spec's "The model field"), in every dialect: chat, completions and embeddings
// through openai-go with model "", messages through the Anthropic SDK, chat, generate and embed
// through Ollama's client. Without lanes an empty
// model is still the dialect's 400.
func TestEmptyModelRoutes(t *testing.T) {
	ctx := context.Background()
	echo := &servertest.Echo{}
	srv := echoTeam(t, echo, nil)
	embedder := echoTeam(t, echo, &llm.Embedding{Pooling: "mean", Length: 3})
	oa := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	chat, err := oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	if err != nil || chat.Model != "alpha" || len(chat.Choices) != 1 {
		t.Fatalf("chat with model \"\": %+v %v", chat, err)
	}
	stream := oa.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	chunks := 0
	for stream.Next() {
		chunks++
	}
	if err := stream.Err(); err != nil || chunks == 0 {
		t.Fatalf("streamed chat with model \"\": %d chunks, %v", chunks, err)
	}
	comp, err := oa.Completions.New(ctx, openai.CompletionNewParams{Model: "",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("once upon")}})
	if err != nil || len(comp.Choices) != 1 {
		t.Fatalf("completion with model \"\": %+v %v", comp, err)
	}
	oe := openai.NewClient(option.WithBaseURL(embedder.URL+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	emb, err := oe.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hello")}})
	if err != nil || len(emb.Data) != 1 {
		t.Fatalf("embedding with model \"\": %+v %v", emb, err)
	}
	an := anthropic.NewClient(anthropicoption.WithBaseURL(srv.URL), anthropicoption.WithAPIKey("unused"), anthropicoption.WithMaxRetries(0))
	msg, err := an.Messages.New(ctx, anthropic.MessageNewParams{Model: "", MaxTokens: 16,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	if err != nil || msg.Model != "alpha" {
		t.Fatalf("messages with model \"\": %+v %v", msg, err)
	}
	u, _ := url.Parse(srv.URL)
	ol := api.NewClient(u, http.DefaultClient)
	var olModel string
	if err := ol.Chat(ctx, &api.ChatRequest{Model: "", Messages: []api.Message{{Role: "user", Content: "hi"}}},
		func(r api.ChatResponse) error { olModel = r.Model; return nil }); err != nil || olModel != "alpha" {
		t.Fatalf("Ollama chat with model \"\": model %q, %v", olModel, err)
	}
	if err := ol.Generate(ctx, &api.GenerateRequest{Model: "", Prompt: "once"},
		func(r api.GenerateResponse) error { olModel = r.Model; return nil }); err != nil || olModel != "alpha" {
		t.Fatalf("Ollama generate with model \"\": model %q, %v", olModel, err)
	}
	eu, _ := url.Parse(embedder.URL)
	if res, err := api.NewClient(eu, http.DefaultClient).Embed(ctx, &api.EmbedRequest{Model: "", Input: "hello"}); err != nil || len(res.Embeddings) != 1 {
		t.Fatalf("Ollama embed with model \"\": %+v %v", res, err)
	}
	if n := len(echo.Chats()); n != 5 { // Ollama generate is a one-turn chat
		t.Errorf("the lane's engine got %d chats, want 5", n)
	}

	single := httptest.NewServer(server.New(server.Config{}, svc2(echo)))
	t.Cleanup(single.Close)
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model": "", "messages": [{"role": "user", "content": "hi"}]}`},
		{"/v1/completions", `{"prompt": "x"}`},
		{"/v1/embeddings", `{"model": "", "input": "x"}`},
		{"/v1/messages", `{"max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}`},
		{"/api/chat", `{"model": "", "messages": [{"role": "user", "content": "hi"}]}`},
		{"/api/generate", `{"prompt": "x"}`},
		{"/api/embed", `{"model": "", "input": "x"}`},
	} {
		if resp, body := servertest.Do(t, "POST", single.URL+c.path, c.body, "Content-Type", "application/json"); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("single-user %s without a model: %d %s, want 400", c.path, resp.StatusCode, body)
		}
	}
}

// echoTeam is a router in team mode with one local lane serving "alpha" on echo (an embedding
// model when emb is set).
func echoTeam(t *testing.T, echo *servertest.Echo, emb *llm.Embedding) *httptest.Server {
	ctx := context.Background()
	model := func(id string) *core.Model {
		m := servertest.EchoModel(id, echo)
		m.EmbeddingFacts = emb
		return m
	}
	svc := core.New(core.Config{}, nil, model("alpha"))
	devices := []lanes.Device{{Name: "cpu"}}
	mgr := lanes.NewManager(lanes.Config{Store: servertest.Store(t), Devices: devices, Catalog: svc,
		Factory: func(ctx context.Context, spec lanes.Spec) (*core.Model, func(), error) {
			return model(spec.Lane.Model), func() {}, nil
		}})
	svc.SetRouter(lanes.NewRouter(mgr, nil, svc))
	t.Cleanup(func() { mgr.Close(ctx) })
	if _, err := mgr.Add(ctx, lanes.NewLane{Name: "main", Device: "cpu", Engine: lanes.Local, Model: "alpha"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-mgr.Lanes()[0].Settled():
	case <-time.After(5 * time.Second):
		t.Fatal("the lane did not settle")
	}
	srv := httptest.NewServer(server.New(server.Config{Lanes: mgr, Devices: devices}, svc))
	t.Cleanup(srv.Close)
	return srv
}

// svc2 is a core without lanes over echo.
func svc2(echo *servertest.Echo) *core.Service {
	return core.New(core.Config{}, nil, servertest.EchoModel("alpha", echo))
}
