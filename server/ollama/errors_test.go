package ollama_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/server/ollama"
	"github.com/superfluid/superfluid/server/servertest"
)

func TestBadInput(t *testing.T) {
	f := setup(t, config{})
	const chat, generate = "/api/chat", "/api/generate"
	chatBody := func(extra string) string {
		b := `{"model":"fake","messages":[{"role":"user","content":"hi"}]`
		if extra != "" {
			b += "," + extra
		}
		return b + "}"
	}
	genBody := func(extra string) string {
		b := `{"model":"fake","prompt":"hi"`
		if extra != "" {
			b += "," + extra
		}
		return b + "}"
	}
	tests := []struct {
		name, method, path, body string
		status                   int
		msg                      string
	}{
		{"malformed JSON", "POST", chat, `{"model":"fake",`, 400, "malformed JSON"},
		{"malformed JSON, generate", "POST", generate, `{"model":`, 400, "malformed JSON"},
		{"trailing garbage", "POST", chat, chatBody("") + "}", 400, "malformed JSON"},
		{"empty body", "POST", chat, ``, 400, "missing request body"},
		{"JSON array", "POST", generate, `[1]`, 400, "JSON object"},
		{"temperature a string", "POST", chat, chatBody(`"options":{"temperature":"hot"}`), 400, `option "temperature" must be a number, got "hot"`},
		{"num_predict a string", "POST", generate, genBody(`"options":{"num_predict":"x"}`), 400, `option "num_predict" must be an integer, got "x"`},
		{"top_k a bool", "POST", chat, chatBody(`"options":{"top_k":true}`), 400, `option "top_k" must be an integer`},
		{"stop a number", "POST", chat, chatBody(`"options":{"stop":5}`), 400, `option "stop" must be an array of strings`},
		{"use_mmap a string", "POST", chat, chatBody(`"options":{"use_mmap":"yes"}`), 400, `option "use_mmap" must be a boolean`},
		{"options a string", "POST", chat, chatBody(`"options":"fast"`), 400, `"options"`},
		{"stream a string", "POST", chat, chatBody(`"stream":"yes"`), 400, `"stream": expected a boolean`},
		{"prompt a number", "POST", generate, `{"model":"fake","prompt":5}`, 400, `"prompt": expected a string`},
		{"unknown model", "POST", chat, `{"model":"nope","messages":[{"role":"user","content":"hi"}]}`, 404, `model "nope" not found, try pulling it first`},
		{"unknown model, generate", "POST", generate, `{"model":"nope:latest","prompt":"hi"}`, 404, `model "nope:latest" not found, try pulling it first`},
		{"unknown model, empty generate", "POST", generate, `{"model":"nope"}`, 404, `model "nope" not found`},
		{"missing model", "POST", chat, `{"messages":[{"role":"user","content":"hi"}]}`, 400, "model is required"},
		{"unknown role", "POST", chat, `{"model":"fake","messages":[{"role":"user","content":"hi"},{"role":"wizard","content":"x"}]}`, 400,
			`messages[1].role is "wizard"; use one of system, user, assistant, tool`},
		{"chat images", "POST", chat, `{"model":"fake","messages":[{"role":"user","content":"what is this?","images":["aGVsbG8="]}]}`, 400, `messages[0].images[0] is an image, and the model fake cannot take it`},
		{"generate images", "POST", generate, genBody(`"images":["aGVsbG8="]`), 400, `images[0] is an image, and the model fake cannot take it`},
		{"think true", "POST", chat, chatBody(`"think":true`), 400, `"fake" does not support thinking`},
		{"think high", "POST", generate, genBody(`"think":"high"`), 400, `"fake" does not support thinking`},
		{"think nonsense", "POST", chat, chatBody(`"think":"extreme"`), 400, "invalid think value"},
		{"suffix", "POST", generate, genBody(`"suffix":"}"`), 400, `"fake" does not support insert`},
		{"custom template", "POST", generate, genBody(`"template":"{{ .Prompt }}"`), 400, "custom templates are not supported"},
		{"raw with system", "POST", generate, genBody(`"raw":true,"system":"x"`), 400, "raw mode does not support template, system, or context"},
		{"raw with context", "POST", generate, genBody(`"raw":true,"context":[1,2]`), 400, "raw mode does not support"},
		{"format yaml", "POST", chat, chatBody(`"format":"yaml"`), 400, `invalid format: "yaml"; expected "json" or a valid JSON Schema object`},
		{"format a number", "POST", generate, genBody(`"format":5`), 400, "invalid format: 5"},
		{"keep_alive nonsense", "POST", chat, chatBody(`"keep_alive":"5x"`), 400, `invalid keep_alive "5x"`},
		{"embed", "POST", "/api/embed", `{"model":"fake","input":"hi"}`, 400, `"fake" does not support embeddings`},
		{"embeddings", "POST", "/api/embeddings", `{"model":"fake","prompt":"hi"}`, 400, `"fake" does not support embeddings`},
		{"embed unknown model", "POST", "/api/embed", `{"model":"nope","input":"hi"}`, 404, `model "nope" not found`},
		{"show without model", "POST", "/api/show", `{}`, 400, "model is required"},
		{"tokenize without content", "POST", "/api/tokenize", `{"model":"fake"}`, 400, "content is required"},
		{"detokenize", "POST", "/api/detokenize", `{"model":"fake","tokens":[1]}`, 501, "detokenizing is not available"},
		{"push", "POST", "/api/push", `{"model":"llama3"}`, 501, "creating and pushing models is not supported"},
		{"create", "POST", "/api/create", `{"model":"x","from":"fake"}`, 501, "creating and pushing models is not supported"},
		{"blob upload", "POST", "/api/blobs/sha256:abc", `x`, 501, "creating and pushing models is not supported"},
		// a fixed set of models (no catalog) cannot be changed
		{"copy, fixed set", "POST", "/api/copy", `{"source":"fake","destination":"x"}`, 400, "fixed set of models"},
		{"delete, fixed set", "DELETE", "/api/delete", `{"model":"fake"}`, 400, "fixed set of models"},
		{"unknown route", "GET", "/api/nope", ``, 404, "unknown route GET /api/nope"},
		{"wrong method", "GET", chat, ``, 405, "GET is not allowed on /api/chat"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := f.do(t, tt.method, tt.path, tt.body)
			checkError(t, resp, b, tt.status, tt.msg)
		})
	}
	if n := len(f.eng.Requests()); n != 0 {
		t.Errorf("bad requests reached the engine %d times", n)
	}
	// HEAD has no body; the status still says it.
	if resp, _ := f.do(t, http.MethodHead, "/api/blobs/sha256:abc", ""); resp.StatusCode != http.StatusNotImplemented {
		t.Errorf("HEAD /api/blobs: %d", resp.StatusCode)
	}
}

// The official client sees Ollama's errors as StatusError with the message.
func TestClientErrors(t *testing.T) {
	f := setup(t, config{})
	err := f.client.Chat(t.Context(), &api.ChatRequest{Model: "nope", Messages: []api.Message{{Role: "user", Content: "hi"}}},
		func(api.ChatResponse) error { return nil })
	var se api.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusNotFound || se.ErrorMessage != `model "nope" not found, try pulling it first` {
		t.Errorf("chat, unknown model: %#v", err)
	}
	err = f.client.Generate(t.Context(), &api.GenerateRequest{Model: "fake", Prompt: "hi", Options: map[string]any{"temperature": "hot"}},
		func(api.GenerateResponse) error { return nil })
	if !errors.As(err, &se) || se.StatusCode != http.StatusBadRequest || !strings.Contains(se.ErrorMessage, `option "temperature"`) {
		t.Errorf("generate, bad option: %#v", err)
	}
	_, err = f.client.Embed(t.Context(), &api.EmbedRequest{Model: "fake", Input: "hi"})
	if !errors.As(err, &se) || se.StatusCode != http.StatusBadRequest || !strings.Contains(se.ErrorMessage, "does not support embeddings") {
		t.Errorf("embed: %#v", err)
	}
	err = f.client.Pull(t.Context(), &api.PullRequest{Model: "llama3"}, func(api.ProgressResponse) error { return nil })
	if !errors.As(err, &se) || se.StatusCode != http.StatusBadRequest || !strings.Contains(se.ErrorMessage, "only Hugging Face references are pulled") {
		t.Errorf("pull: %#v", err)
	}
}

func TestBodyTooLarge(t *testing.T) {
	f := setup(t, config{})
	const size = ollama.MaxBodyBytes + 1
	for _, chunked := range []bool{false, true} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, f.srv.URL+"/api/chat", io.NopCloser(io.LimitReader(endless{}, size)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.ContentLength = size
		if chunked {
			req.ContentLength = -1 // unknown length: the transport sends it chunked
		}
		resp, b := servertest.Send(t, req)
		checkError(t, resp, b, http.StatusRequestEntityTooLarge, "larger than 100 MiB")
	}
	if resp, b := f.do(t, http.MethodPost, "/api/chat", `{"model":"fake","stream":false,"messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("a good request after oversized ones: %d %s", resp.StatusCode, b)
	}
}

type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// A full queue is Ollama's 503 "server busy", with Retry-After.
func TestOverloaded(t *testing.T) {
	f := setup(t, config{queue: 1, fake: func(e *enginetest.Engine) { e.TokenDelay = time.Minute }})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for range 2 { // one on the lane, one queued
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = f.client.Generate(ctx, &api.GenerateRequest{Model: "fake", Prompt: "hi"}, func(api.GenerateResponse) error { return nil })
		}()
	}
	defer wg.Wait()
	defer cancel()
	for deadline := time.Now().Add(10 * time.Second); len(f.eng.Requests()) < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the two requests never reached the engine")
		}
	}
	resp, b := f.do(t, http.MethodPost, "/api/generate", `{"model":"fake","prompt":"hi"}`)
	checkError(t, resp, b, http.StatusServiceUnavailable, "server busy, please try again")
	if ra := resp.Header.Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After = %q, want 1", ra)
	}
}
