package app

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestLongRunsEveryDialect: replies of 32,000 and 1,000,000 repeated characters (a coding
// agent's conversation can hold one) through every dialect on a real model whose tokenizer is
// DeepSeek-Coder's BPE, whose std::regex pre-tokenizer overflowed the worker's stack on such
// runs (SIGSEGV inside llama_tokenize). Each answers with a clean reply or a 400 for a prompt
// over the window, the worker is the same process afterwards, nothing is quarantined, and the
// model answers a normal request at the end.
func TestLongRunsEveryDialect(t *testing.T) {
	cfg := testConfig(t, writeBPELlama(t))
	cfg.ContextLength, cfg.Parallel = 4096, 1
	a, srv := startServer(t, cfg, true)
	model := modelID(cfg.ModelPath)
	pid := a.Worker().PID()
	for _, text := range []string{strings.Repeat("!", 32000), strings.Repeat("中", 32000), strings.Repeat("!", 1_000_000)} {
		q, _ := json.Marshal(text)
		history := `"messages":[{"role":"user","content":"Say it"},{"role":"assistant","content":` + string(q) + `},{"role":"user","content":"Again"}]`
		for _, c := range []struct{ name, path, body string }{
			{"OpenAI chat", "/v1/chat/completions", `{"model":"` + model + `","max_tokens":4,` + history + `}`},
			{"Anthropic messages", "/v1/messages", `{"model":"` + model + `","max_tokens":4,` + history + `}`},
			{"Anthropic count_tokens", "/v1/messages/count_tokens", `{"model":"` + model + `",` + history + `}`},
			{"Ollama chat", "/api/chat", `{"model":"` + model + `","stream":false,"options":{"num_predict":4},` + history + `}`},
			{"Responses", "/v1/responses", `{"model":"` + model + `","max_output_tokens":16,"input":` + string(q) + `}`},
			{"OpenAI tokenize", "/v1/tokenize", `{"model":"` + model + `","input":` + string(q) + `}`},
			{"Ollama tokenize", "/api/tokenize", `{"model":"` + model + `","content":` + string(q) + `}`},
		} {
			for try := range 2 { // a retry is served again, never quarantined
				status, _, b := post(t, srv.URL+c.path, c.body)
				body := string(b)
				tooLong := strings.Contains(body, "context_length_exceeded") || strings.Contains(body, "prompt is too long") ||
					strings.Contains(body, "but the context window is")
				if status != http.StatusOK && !(status == http.StatusBadRequest && tooLong) || strings.Contains(body, "quarantine") {
					t.Errorf("%s, %d bytes of %q, try %d: %d %.300s; want 200 or a 400 for a prompt over the window",
						c.name, len(text), text[:1], try+1, status, body)
				}
				if now := a.Worker().PID(); now != pid {
					t.Fatalf("%s, %d bytes of %q: the worker died (pid %d, now %d): %d %.300s", c.name, len(text), text[:1], pid, now, status, body)
				}
			}
		}
	}
	status, _, b := post(t, srv.URL+"/v1/chat/completions", chatJSON(model, "Once upon a time", `,"max_tokens":4`))
	if status != http.StatusOK || a.Worker().PID() != pid {
		t.Fatalf("a normal chat afterwards: %d %.300s (worker pid %d, was %d)", status, b, a.Worker().PID(), pid)
	}
}
