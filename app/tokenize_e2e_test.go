package app

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestSpelledTextRefused: a long text of characters the vocabulary has no token for (262 KB of
// control characters, found by FuzzTokenize) fits a 32k window by its length, and the real
// worker's SentencePiece tokenizer would spend half a minute on it; the tokenize routes
// answer 400 at once instead, in each dialect's shape, and the same worker goes on serving.
func TestSpelledTextRefused(t *testing.T) {
	cfg := testConfig(t, testModel)
	cfg.ContextLength, cfg.Parallel = 32768, 1
	a, srv := startServer(t, cfg, true)
	model := modelID(testModel)
	pid := a.Worker().PID()
	text, _ := json.Marshal(strings.Repeat("\x00\x00\x00\x10", 65498))
	for _, c := range []struct{ name, path, body, want string }{
		{"OpenAI tokenize", "/v1/tokenize", `{"model":"` + model + `","input":` + string(text) + `}`, `"type":"invalid_request_error"`},
		{"Ollama tokenize", "/api/tokenize", `{"model":"` + model + `","content":` + string(text) + `}`, `{"error":"`},
	} {
		status, _, b := post(t, srv.URL+c.path, c.body)
		if status != http.StatusBadRequest || !strings.Contains(string(b), c.want) || !strings.Contains(string(b), "no token for") {
			t.Errorf("%s: %d %.300s; want 400 with %s saying the characters have no token", c.name, status, b, c.want)
		}
	}
	status, _, b := post(t, srv.URL+"/v1/tokenize", `{"model":"`+model+`","input":"Once upon a time"}`)
	if status != http.StatusOK || a.Worker().PID() != pid {
		t.Fatalf("after the refusals: tokenize %d %s, worker pid %d (was %d)", status, b, a.Worker().PID(), pid)
	}
}
