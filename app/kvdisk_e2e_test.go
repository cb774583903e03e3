package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// chatTurn is one greedy chat completion over HTTP: the reply and its usage.
type chatTurn struct {
	content                    string
	prompt, completion, cached int
}

func chatTurnOf(t *testing.T, url, model string, messages []map[string]string) chatTurn {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": model, "messages": messages, "max_tokens": 48, "temperature": 0})
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var reply struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
			Details          struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil || resp.StatusCode != 200 || len(reply.Choices) != 1 {
		t.Fatalf("chat: %d %v %+v", resp.StatusCode, err, reply)
	}
	u := reply.Usage
	return chatTurn{reply.Choices[0].Message.Content, u.PromptTokens, u.CompletionTokens, u.Details.CachedTokens}
}

// runAppAt starts the app on cfg behind httptest; stop closes both (and is safe to call twice).
func runAppAt(t *testing.T, cfg Config) (url string, stop func()) {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewServer(a.Handler())
	done := false
	stop = func() {
		if !done {
			done = true
			srv.Close()
			a.Close()
		}
	}
	t.Cleanup(stop)
	return srv.URL, stop
}

// TestPrefixCacheSurvivesRestart: a ~1,500-token conversation through the real worker and the
// HTTP API; the app restarts on the same data dir, and the next turn is served from the prefix
// the worker saved on its way out, answering as an app that never restarted does.
func TestPrefixCacheSurvivesRestart(t *testing.T) {
	needStories(t)
	config := func() Config {
		cfg := testConfig(t, testModel)
		cfg.ContextLength = 2048
		cfg.Parallel = 1
		return cfg
	}
	restarted, steady := config(), config()
	model := modelID(testModel)
	urlR, stopR := runAppAt(t, restarted)
	urlS, _ := runAppAt(t, steady)

	messages := []map[string]string{{"role": "system", "content": "You tell short stories for children."}}
	var last chatTurn
	for i := 0; last.prompt+last.completion < 1400; i++ {
		if i == 12 {
			t.Fatalf("the conversation is still %d tokens after %d turns", last.prompt+last.completion, i)
		}
		user := strings.Repeat(fmt.Sprintf("Tom and Sue went to the park on day %d. They played with a red ball and a big dog. ", i), 6)
		messages = append(messages, map[string]string{"role": "user", "content": user})
		r, s := chatTurnOf(t, urlR, model, messages), chatTurnOf(t, urlS, model, messages)
		if r.content != s.content {
			t.Fatalf("turn %d: the two apps answer %q and %q", i, r.content, s.content)
		}
		messages = append(messages, map[string]string{"role": "assistant", "content": r.content})
		last = r
	}

	stopR()
	saved, _ := filepath.Glob(filepath.Join(restarted.DataDir, "kv", "*.kv"))
	if len(saved) == 0 {
		t.Fatal("the worker saved no prefix as the app stopped")
	}
	urlR, _ = runAppAt(t, restarted)

	messages = append(messages, map[string]string{"role": "user", "content": "What did the dog do next?"})
	r, s := chatTurnOf(t, urlR, model, messages), chatTurnOf(t, urlS, model, messages)
	if so := last.prompt + last.completion; r.cached < so-4 {
		t.Errorf("after the restart the next turn cached %d of %d prompt tokens, want ≥ %d (the conversation so far)", r.cached, r.prompt, so-4)
	}
	if r.content != s.content {
		t.Errorf("after the restart the app answers %q, the one that never restarted %q", r.content, s.content)
	}
	t.Logf("conversation %d tokens; after the restart: %d of %d prompt tokens cached (the steady app: %d)", last.prompt+last.completion, r.cached, r.prompt, s.cached)
	if _, err := os.Stat(filepath.Join(steady.DataDir, "kv")); err != nil {
		t.Errorf("the steady app's kv folder: %v", err)
	}
}
