package core_test

import (
	"context"
	"testing"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/store"
)

// TestModelSettingsApply: a model's settings fill what a request leaves unset (sampling, cap,
// system prompt), the request's own values win, and a new context length reloads the model.
func TestModelSettingsApply(t *testing.T) {
	cat := servertest.NewCatalog(t, models.Config{})
	e := cat.AddModel(t, "m", gguftest.TinyLlamaOptions{ChatTemplate: "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"})
	ctx := context.Background()
	temp, topK := 0.1, 7
	if err := cat.Svc.SetModelSettings(ctx, store.ModelSettings{ModelID: "m", Temperature: &temp, TopK: &topK, MaxTokens: 5, SystemPrompt: "Be brief."}); err != nil {
		t.Fatal(err)
	}
	chatOnce := func(gen llm.Request, msgs ...chat.Message) llm.Request {
		t.Helper()
		if _, err := cat.Svc.Chat(ctx, &core.ChatRequest{ID: "r", Model: "m", Messages: msgs, Generation: gen}, func(int, llm.Event) error { return nil }); err != nil {
			t.Fatal(err)
		}
		reqs := cat.Runner(e.Path).Requests()
		return reqs[len(reqs)-1]
	}
	got := chatOnce(llm.Request{}, chat.Message{Role: "user", Content: "hi"})
	if got.Sampling.Temperature == nil || *got.Sampling.Temperature != 0.1 || *got.Sampling.TopK != 7 || got.MaxTokens != 5 {
		t.Fatalf("defaults not applied: %+v", got)
	}
	if got.Prompt != "[system]Be brief.[user]hi" {
		t.Fatalf("prompt %q, want the default system prompt first", got.Prompt)
	}
	own := 0.9
	got = chatOnce(llm.Request{MaxTokens: 3, Sampling: llm.Sampling{Temperature: &own}},
		chat.Message{Role: "system", Content: "Mine."}, chat.Message{Role: "user", Content: "hi"})
	if *got.Sampling.Temperature != 0.9 || got.MaxTokens != 3 || got.Prompt != "[system]Mine.[user]hi" {
		t.Fatalf("the request's own values must win: %+v", got)
	}
	m, _ := cat.Svc.Model("m")
	if !m.Loaded() {
		t.Fatal("not loaded after a chat")
	}
	if err := cat.Svc.SetModelSettings(ctx, store.ModelSettings{ModelID: "m", ContextLength: 1024}); err != nil {
		t.Fatal(err)
	}
	m, _ = cat.Svc.Model("m")
	if m.Loaded() || m.Info().ContextLength != 1024 {
		t.Fatalf("after a new context length: loaded %v, context %d", m.Loaded(), m.Info().ContextLength)
	}
	if err := cat.Svc.SetModelSettings(ctx, store.ModelSettings{ModelID: "m", Lanes: -1}); err == nil {
		t.Fatal("negative lanes accepted")
	}
	if err := cat.Svc.SetModelSettings(ctx, store.ModelSettings{ModelID: "nope"}); err == nil {
		t.Fatal("settings for an unknown model accepted")
	}
}
