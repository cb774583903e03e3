package enginetest

import (
	"context"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

// TestScripted: each generation streams what the script says for its prompt, under the fake's
// own limits (max tokens, stop strings); the runner loads and unloads; requests are kept.
func TestScripted(t *testing.T) {
	s := NewScripted(1000, func(req *llm.Request) string {
		if strings.Contains(req.Prompt, "result") {
			return "done"
		}
		return "<tool_call>{}</tool_call>"
	})
	gen := func(req llm.Request) (string, string) {
		var text strings.Builder
		reason := ""
		err := s.Generate(context.Background(), &req, func(ev llm.Event) error {
			text.WriteString(ev.Text)
			if ev.Done != nil {
				reason = ev.Done.FinishReason
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return text.String(), reason
	}
	for _, tt := range []struct {
		req          llm.Request
		text, reason string
	}{
		{llm.Request{Prompt: "first"}, "<tool_call>{}</tool_call>", llm.FinishStop},
		{llm.Request{Prompt: "with the result"}, "done", llm.FinishStop},
		{llm.Request{Prompt: "first", MaxTokens: 3}, "<to", llm.FinishLength},
		{llm.Request{Prompt: "first", Stop: []string{"{"}}, "<tool_call>", llm.FinishStop},
	} {
		if text, reason := gen(tt.req); text != tt.text || reason != tt.reason {
			t.Errorf("prompt %q max %d stop %q: %q (%s), want %q (%s)", tt.req.Prompt, tt.req.MaxTokens, tt.req.Stop, text, reason, tt.text, tt.reason)
		}
	}
	if n := len(s.Requests()); n != 4 {
		t.Errorf("%d requests kept, want 4", n)
	}
	if s.Loaded() {
		t.Error("loaded before Start")
	}
	if err := s.Start(context.Background()); err != nil || !s.Loaded() {
		t.Errorf("Start: %v, loaded %v", err, s.Loaded())
	}
	if err := s.Unload(context.Background()); err != nil || s.Loaded() {
		t.Errorf("Unload: %v, loaded %v", err, s.Loaded())
	}
	if got := s.Info().ContextLength; got != 1000 {
		t.Errorf("window %d, want 1000", got)
	}
}
