package app

import (
	"context"
	"encoding/json"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
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

// runClasses are the kinds of repeated character the long-run tests send.
var runClasses = []string{"a", "!", ".", "-", " ", "\n", "\t", "7", "中"}

// randomText is n characters drawn from the whole of Unicode below U+30000 (valid UTF-8).
func randomText(n int) string {
	rng := rand.New(rand.NewSource(int64(n)))
	var b strings.Builder
	for i := 0; i < n; {
		if r := rune(rng.Intn(0x30000)); utf8.ValidRune(r) {
			b.WriteRune(r)
			i++
		}
	}
	return b.String()
}

// TestLongRunsEveryTokenizer: 32,000 and 1,000,000 repeated characters of each class, and
// random text, through chat, counting and tokenizing routes on every tokenizer in
// ../shared/models but BERT's, each carried by a tiny random-weight llama (the catalog takes
// only models with weights; BERT's WordPiece, an encoder's, is covered in the engine by
// TestTokenizeLongRuns): each answers 200, or a 400 (a prompt over the window, or characters
// the vocabulary spells byte by byte too many in a row), never a 500, and each model answers
// a normal chat afterwards. (TestLongRunsEveryDialect runs on a model the test writes.)
func TestLongRunsEveryTokenizer(t *testing.T) {
	dir := filepath.Join("..", "..", "shared", "models")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("%s is absent (a fresh clone): TestLongRunsEveryDialect covers a written BPE model", dir)
	}
	cfg := testConfig(t, testModel)
	cfg.ContextLength, cfg.Parallel = 4096, 1
	a, srv := startServer(t, cfg, false)
	for _, name := range []string{"ggml-vocab-deepseek-coder-6.7b-instruct.gguf", "ggml-vocab-llama-spm.gguf", "ggml-vocab-phi-3.gguf",
		"llama-2-tiny-random.gguf", "stories260K.gguf"} {
		path := filepath.Join(dir, name)
		if strings.HasPrefix(name, "ggml-vocab-") {
			path = writeLlamaWithVocab(t, path) // the catalog takes only models with weights
		}
		e, err := a.Manager().Catalog().AddLocal(context.Background(), path, "")
		if err != nil {
			t.Fatal(err)
		}
		model := e.ID
		texts := []string{randomText(32000)}
		for _, c := range runClasses {
			texts = append(texts, strings.Repeat(c, 32000), strings.Repeat(c, 1_000_000))
		}
		for _, text := range texts {
			q, _ := json.Marshal(text)
			msgs := `"messages":[{"role":"user","content":` + string(q) + `}]`
			routes := []struct{ name, path, body string }{
				{"OpenAI tokenize", "/v1/tokenize", `{"model":"` + model + `","input":` + string(q) + `}`},
				{"Anthropic count_tokens", "/v1/messages/count_tokens", `{"model":"` + model + `",` + msgs + `}`},
				{"Ollama tokenize", "/api/tokenize", `{"model":"` + model + `","content":` + string(q) + `}`},
				{"OpenAI chat", "/v1/chat/completions", `{"model":"` + model + `","max_tokens":2,` + msgs + `}`},
				{"Anthropic messages", "/v1/messages", `{"model":"` + model + `","max_tokens":2,` + msgs + `}`},
			}
			for _, r := range routes {
				status, _, b := post(t, srv.URL+r.path, r.body)
				if status != http.StatusOK && status != http.StatusBadRequest {
					t.Errorf("%s, %s, %d bytes of %q: %d %.300s; want 200 or 400", name, r.name, len(text), text[:1], status, b)
				}
			}
		}
		status, _, b := post(t, srv.URL+"/v1/tokenize", `{"model":"`+model+`","input":"Once upon a time"}`)
		if status != http.StatusOK {
			t.Errorf("%s: a normal tokenize afterwards: %d %.300s", name, status, b)
		}
		chatOnce(t, srv.URL, model) // fails the test unless the chat succeeds
	}
}
