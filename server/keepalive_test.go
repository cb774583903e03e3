package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestNonstreamKeepalive: with --nonstream-keepalive, a non-streaming generation of each
// dialect commits 200 with x-superfluid-keepalive: whitespace and spaces before its JSON; an
// error after admission arrives as the dialect's error JSON after the spaces (status 200, the
// record keeps 500); an error before admission, and streams, are untouched.
func TestNonstreamKeepalive(t *testing.T) {
	ok := setupPolicy(t, server.Config{NonstreamKeepalive: time.Millisecond}, 0, func(e *enginetest.Engine) { e.TokenDelay = 2 * time.Millisecond })
	failing := setupPolicy(t, server.Config{NonstreamKeepalive: time.Millisecond}, 0, func(e *enginetest.Engine) {
		e.Fail, e.FailAfter = errors.New("the engine broke"), 2
	})
	chat := `{"model":"m1","messages":[{"role":"user","content":"hi"}]`
	tests := []struct {
		name      string
		failing   bool
		path      string
		body      string
		status    int
		keepalive bool
		check     func(b map[string]any) bool
	}{
		{"openai", false, "/v1/chat/completions", chat + `}`, 200, true, func(b map[string]any) bool {
			c, _ := b["choices"].([]any)
			return len(c) == 1
		}},
		{"openai completions", false, "/v1/completions", `{"model":"m1","prompt":"hi"}`, 200, true, func(b map[string]any) bool { return b["object"] == "text_completion" }},
		{"anthropic", false, "/v1/messages", `{"model":"m1","max_tokens":32,"messages":[{"role":"user","content":"hi"}]}`, 200, true,
			func(b map[string]any) bool { return b["type"] == "message" }},
		{"ollama", false, "/api/chat", chat + `,"stream":false}`, 200, true, func(b map[string]any) bool { return b["done"] == true }},
		{"openai stream", false, "/v1/chat/completions", chat + `,"stream":true}`, 200, false, nil},
		{"unknown model", false, "/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"hi"}]}`, 404, false, func(b map[string]any) bool {
			e, _ := b["error"].(map[string]any)
			return e["code"] == "model_not_found"
		}},
		{"openai failing", true, "/v1/chat/completions", chat + `}`, 200, true, func(b map[string]any) bool {
			e, _ := b["error"].(map[string]any)
			return e["type"] == "server_error" && strings.Contains(e["message"].(string), "the engine broke")
		}},
		{"anthropic failing", true, "/v1/messages", `{"model":"m1","max_tokens":32,"messages":[{"role":"user","content":"hi"}]}`, 200, true,
			func(b map[string]any) bool {
				e, _ := b["error"].(map[string]any)
				return b["type"] == "error" && e["type"] == "api_error"
			}},
		{"ollama failing", true, "/api/chat", chat + `,"stream":false}`, 200, true, func(b map[string]any) bool {
			e, _ := b["error"].(string)
			return strings.Contains(e, "the engine broke")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ok
			if tt.failing {
				p = failing
			}
			resp, body := servertest.Do(t, "POST", p.srv.URL+tt.path, tt.body, "Authorization", "Bearer "+keyFree)
			if resp.StatusCode != tt.status {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if got := resp.Header.Get("X-Superfluid-Keepalive"); (got == "whitespace") != tt.keepalive {
				t.Fatalf("x-superfluid-keepalive %q", got)
			}
			if tt.keepalive && !strings.HasPrefix(string(body), " ") {
				t.Fatalf("no padding: %q", body)
			}
			if tt.check == nil {
				return
			}
			var b map[string]any
			if err := json.Unmarshal(body, &b); err != nil || !tt.check(b) {
				t.Fatalf("body %q: %v", body, err)
			}
		})
	}
	if err := failing.store.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs, err := failing.store.RecentRequests(context.Background(), 3)
	if err != nil || len(recs) != 3 {
		t.Fatal(recs, err)
	}
	for _, r := range recs {
		if r.Status != 500 || !strings.Contains(r.Error, "the engine broke") {
			t.Fatalf("record %+v", r)
		}
	}
}

// TestNonstreamKeepaliveSDKs: the official SDKs read a padded reply (leading whitespace is
// valid JSON).
func TestNonstreamKeepaliveSDKs(t *testing.T) {
	p := setupPolicy(t, server.Config{NonstreamKeepalive: time.Millisecond}, 0, func(e *enginetest.Engine) { e.TokenDelay = 2 * time.Millisecond })
	res, err := p.chat(keyFree, "hi")
	if err != nil || res.Choices[0].Message.Content != "Once upon a time" {
		t.Fatalf("openai-go: %v %v", res, err)
	}
	msg, err := p.anthropic(keyFree).Messages.New(context.Background(), anthropic.MessageNewParams{Model: "m1", MaxTokens: 32,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	if err != nil || len(msg.Content) == 0 || msg.Content[0].Text != "Once upon a time" {
		t.Fatalf("anthropic-sdk-go: %v %v", msg, err)
	}
}
