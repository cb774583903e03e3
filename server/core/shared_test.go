package core

import (
	"context"
	"testing"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/auth"
)

// sharedTexts is a SharedPrefixes with fixed texts per model id; asked records the ids asked.
type sharedTexts struct {
	byModel map[string][]string
	asked   []string
}

func (s *sharedTexts) SharedTexts(_ context.Context, model string) []string {
	s.asked = append(s.asked, model)
	return s.byModel[model]
}

// TestSharedPrefixOfRequests: a generation carries, as llm.Request.SharedPrefix, the shared text
// its prompt begins with, in the form the prompt holds it (a chat's system turn as the template
// renders it, a completion's raw text); a system prompt that is not a shared one, another
// model's shared text, or no cache isolation carries none.
func TestSharedPrefixOfRequests(t *testing.T) {
	const team = "You are the team's assistant."
	tmpl, err := chat.Parse("{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}")
	if err != nil {
		t.Fatal(err)
	}
	texts := &sharedTexts{byModel: map[string][]string{"fake": {"Something else entirely.", team}, "other": {"Be brief."}}}
	chatWith := func(system string) *ChatRequest {
		r := userChat("hello")
		r.Messages = append([]chat.Message{{Role: "system", Content: system}}, r.Messages...)
		return r
	}
	raw := func(prompt string) *CompletionRequest {
		return &CompletionRequest{ID: "cmpl-test", Model: "fake", Generation: llm.Request{Prompt: prompt, MaxTokens: 2}}
	}
	tests := []struct {
		name    string
		isolate bool
		chat    *ChatRequest
		raw     *CompletionRequest
		want    string
	}{
		{"chat with the shared system prompt", true, chatWith(team), nil, "<|system|>" + team + "<|end|><|user|>"},
		{"chat with a private system prompt", true, chatWith("Be brief."), nil, ""},
		{"chat whose system prompt starts like the shared one", true, chatWith("You are the team's lawyer."), nil, "<|system|>" + team + "<|end|><|user|>"},
		{"completion starting with the shared text", true, nil, raw(team + " Q: why?"), team},
		{"completion without it", true, nil, raw("Q: why?"), ""},
		{"no cache isolation", false, chatWith(team), nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := enginetest.New(256, "ok")
			m := fakeModel(t, e)
			m.Template = tmpl
			svc := New(Config{IsolateCache: tt.isolate, SharedPrefixes: texts}, nil, m)
			ctx := auth.NewContext(context.Background(), &auth.Identity{ID: "key-1", Name: "alice"})
			if tt.chat != nil {
				_, err = svc.Chat(ctx, tt.chat, func(int, llm.Event) error { return nil })
			} else {
				_, err = svc.Complete(ctx, tt.raw, func(int, llm.Event) error { return nil })
			}
			if err != nil {
				t.Fatal(err)
			}
			reqs := e.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d generations, want 1", len(reqs))
			}
			if got := reqs[0].SharedPrefix; got != tt.want {
				t.Errorf("SharedPrefix %q, want %q", got, tt.want)
			}
		})
	}
	for _, id := range texts.asked {
		if id != "fake" {
			t.Errorf("asked for the shared texts of %q, want only the model's own id", id)
		}
	}
}
