package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/superfluid/superfluid/server/servertest"
)

// TestDialectTable walks the router's table of dialects: a request without a key to a path
// of each dialect (and to the router's own keys and usage routes, and to a path nobody owns)
// is refused in that dialect's error shape. Dropping a dialect from the table fails it: its
// paths fall to another shape.
func TestDialectTable(t *testing.T) {
	k := setupKeyed(t, "127.0.0.1")
	cases := []struct{ method, path, shape string }{
		{"POST", "/v1/messages", "anthropic"},
		{"POST", "/v1/messages/count_tokens", "anthropic"},
		{"POST", "/api/chat", "ollama"},
		{"GET", "/api/tags", "ollama"},
		{"GET", "/", "ollama"},
		{"POST", "/v1/chat/completions", "openai"},
		{"POST", "/v1/responses", "openai"},
		{"GET", "/props", "openai"},
		{"GET", "/v1/keys", "openai"},
		{"GET", "/v1/usage", "openai"},
		{"GET", "/no/such/route", "openai"},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			resp, body := servertest.Do(t, c.method, k.srv.URL+c.path, "")
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if got := errorShape(body); got != c.shape {
				t.Fatalf("a refusal on %s is in %s's shape, want %s's: %s", c.path, got, c.shape, body)
			}
		})
	}
}

// errorShape names the dialect whose error shape body has: Anthropic's {"type": "error",
// "error": {"type", "message"}}, OpenAI's {"error": {"message", "type", "param", "code"}} or
// Ollama's {"error": "..."}.
func errorShape(body []byte) string {
	var e struct {
		Type  string          `json:"type"`
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || len(e.Error) == 0 {
		return "none"
	}
	var msg string
	var obj struct {
		Type    string  `json:"type"`
		Message string  `json:"message"`
		Code    *string `json:"code"`
	}
	switch {
	case json.Unmarshal(e.Error, &msg) == nil && msg != "":
		return "ollama"
	case json.Unmarshal(e.Error, &obj) != nil || obj.Message == "":
		return "none"
	case e.Type == "error" && obj.Type == "authentication_error":
		return "anthropic"
	case e.Type == "" && obj.Type == "invalid_request_error" && obj.Code != nil && *obj.Code == "invalid_api_key":
		return "openai"
	}
	return "none"
}
