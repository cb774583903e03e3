package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"

	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/servertest"
)

// limited is one refusal as a test expects it.
type limited struct {
	code       string
	retryAfter string
	message    string
}

// checkOpenAI429 checks an openai-go error against want: 429, the code, Retry-After.
func checkOpenAI429(t *testing.T, err error, want limited) {
	t.Helper()
	var e *openai.Error
	if !errors.As(err, &e) || e.StatusCode != http.StatusTooManyRequests || e.Code != want.code || e.Type != "rate_limit_error" ||
		!strings.Contains(e.Message, want.message) {
		t.Fatalf("got %v, want 429 %s %q", err, want.code, want.message)
	}
	if got := e.Response.Header.Get("Retry-After"); got != want.retryAfter {
		t.Fatalf("Retry-After %q, want %q", got, want.retryAfter)
	}
}

// TestRateLimitPerAddress: a burst over the per-address limit is 429 rate_limit_exceeded with
// Retry-After in each dialect's shape, then the client recovers once the wait has passed.
func TestRateLimitPerAddress(t *testing.T) {
	dialects := []struct {
		name string
		send func(p *policyServer) (status int, retryAfter string, ok bool)
	}{
		{"openai", func(p *policyServer) (int, string, bool) {
			_, err := p.chat(keyFree, "hi")
			var e *openai.Error
			if err == nil {
				return 200, "", true
			}
			if !errors.As(err, &e) {
				return 0, "", false
			}
			return e.StatusCode, e.Response.Header.Get("Retry-After"), e.Code == "rate_limit_exceeded" && e.Type == "rate_limit_error"
		}},
		{"anthropic", func(p *policyServer) (int, string, bool) {
			_, err := p.anthropic(keyFree).Messages.New(context.Background(), anthropic.MessageNewParams{Model: "m1", MaxTokens: 8,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
			var e *anthropic.Error
			if err == nil {
				return 200, "", true
			}
			if !errors.As(err, &e) {
				return 0, "", false
			}
			return e.StatusCode, e.Response.Header.Get("Retry-After"), strings.Contains(e.RawJSON(), `"rate_limit_error"`)
		}},
		{"ollama", func(p *policyServer) (int, string, bool) {
			resp, body := servertest.Do(t, "POST", p.srv.URL+"/api/chat", `{"model":"m1","stream":false,"messages":[{"role":"user","content":"hi"}]}`,
				"Authorization", "Bearer "+keyFree)
			var e struct{ Error string }
			_ = json.Unmarshal(body, &e)
			return resp.StatusCode, resp.Header.Get("Retry-After"), resp.StatusCode == 200 || strings.Contains(e.Error, "at most 3 a minute")
		}},
	}
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			p := setupPolicy(t, server.Config{}, 3, nil) // 3 a minute: one every 20 s
			for i := range 3 {
				if status, _, ok := d.send(p); status != 200 || !ok {
					t.Fatalf("request %d: %d", i+1, status)
				}
			}
			for range 2 { // refusals spend nothing: the wait stays the same
				if status, ra, ok := d.send(p); status != 429 || ra != "20" || !ok {
					t.Fatalf("over the limit: %d, Retry-After %q, shape ok %v", status, ra, ok)
				}
			}
			p.clock.add(20 * time.Second)
			if status, _, _ := d.send(p); status != 200 {
				t.Fatalf("after Retry-After: %d", status)
			}
		})
	}
}

// TestRateLimitPerKey: a key's requests a minute: a burst over it is 429 with Retry-After,
// then recovery; the refused request takes nothing from the per-address allowance.
func TestRateLimitPerKey(t *testing.T) {
	p := setupPolicy(t, server.Config{}, 4, nil)
	for i := range 2 {
		if _, err := p.chat(keyRPM, "hi"); err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
	}
	_, err := p.chat(keyRPM, "hi")
	checkOpenAI429(t, err, limited{"rate_limit_exceeded", "30", `the API key "rpm" may send 2 requests a minute`})
	// The address has spent 2 of its 4 (the refusal gave its one back): two more pass.
	for i := range 2 {
		if _, err := p.chat(keyFree, "hi"); err != nil {
			t.Fatalf("another key's request %d: %v", i+1, err)
		}
	}
	_, err = p.chat(keyFree, "hi")
	checkOpenAI429(t, err, limited{"rate_limit_exceeded", "15", "at most 4 a minute"})
	p.clock.add(30 * time.Second)
	if _, err := p.chat(keyRPM, "hi"); err != nil {
		t.Fatalf("after Retry-After: %v", err)
	}
}

// TestTokensPerMinute: the request that spends a key's tokens a minute is served; the next is
// 429 rate_limit_exceeded until the tokens are paid back.
func TestTokensPerMinute(t *testing.T) {
	p := setupPolicy(t, server.Config{}, 0, nil)
	res, err := p.chat(keyTok, strings.Repeat("many tokens ", 5))
	if err != nil {
		t.Fatal(err)
	}
	if used := res.Usage.TotalTokens; used < 50 {
		t.Fatalf("the first request used %d tokens; the test needs at least the key's 50", used)
	}
	_, err = p.chat(keyTok, "hi")
	checkOpenAI429(t, err, limited{"rate_limit_exceeded", "2", `the API key "tok" may use 50 tokens a minute`}) // 1 token back in 1.2 s
	if _, err := p.chat(keyFree, "hi"); err != nil {
		t.Fatalf("another key: %v", err)
	}
	p.clock.add(2 * time.Second)
	if _, err := p.chat(keyTok, "hi"); err != nil {
		t.Fatalf("after Retry-After: %v", err)
	}
}

// TestConcurrencyLimit: a key allowed one request at once gets 429 concurrency_limit_exceeded
// for a second while the first runs, and is served once it ended.
func TestConcurrencyLimit(t *testing.T) {
	p := setupPolicy(t, server.Config{}, 0, func(e *enginetest.Engine) { e.Lanes = 2 })
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := p.chat(keyOne, "hold"); err != nil {
			t.Error(err)
		}
	}()
	waitFor(t, "the first request running", func() bool { return p.eng.held.Load() == 1 })
	_, err := p.chat(keyOne, "hi")
	checkOpenAI429(t, err, limited{"concurrency_limit_exceeded", "1", `the API key "one" may run 1 requests at once`})
	if _, err := p.chat(keyFree, "hi"); err != nil {
		t.Fatalf("another key: %v", err)
	}
	p.unhold()
	wg.Wait()
	if _, err := p.chat(keyOne, "hi"); err != nil {
		t.Fatalf("after the first ended: %v", err)
	}
}

// TestUnknownKeysLeaveNoLimiters: 1,000 requests with random keys are all 401 and leave no
// limiter and no key behind; a known key's requests make one limiter.
func TestUnknownKeysLeaveNoLimiters(t *testing.T) {
	p := setupPolicy(t, server.Config{}, 10_000, nil)
	size := p.keys.Size()
	for range 1000 {
		resp, _ := servertest.Do(t, "POST", p.srv.URL+"/v1/chat/completions", `{"model":"m1","messages":[{"role":"user","content":"hi"}]}`,
			"Authorization", "Bearer "+auth.Generate())
		if resp.StatusCode != 401 {
			t.Fatalf("a random key: %d", resp.StatusCode)
		}
	}
	if p.limits.Keys() != 0 || p.limits.Clients() != 0 || p.keys.Size() != size {
		t.Fatalf("after unknown keys: %d key limiters, %d address limiters, %d keys (had %d)", p.limits.Keys(), p.limits.Clients(), p.keys.Size(), size)
	}
	for range 3 {
		if _, err := p.chat(keyRPM, "hi"); err != nil {
			t.Fatal(err)
		}
		p.clock.add(time.Minute)
	}
	if p.limits.Keys() != 1 || p.limits.Clients() != 1 {
		t.Fatalf("after one key's requests: %d key limiters, %d address limiters", p.limits.Keys(), p.limits.Clients())
	}
}
