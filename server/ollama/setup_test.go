package ollama_test

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/store"
)

// chatML is a minimal ChatML template, the shape most instruct models ship.
const chatML = `{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`

const defaultReply = "Hello world!"

// fimPrefix is the FIM prefix marker's id in the test model; suffix and middle follow it.
const fimPrefix = 300

// Timings and cache hits the test engine reports on every Done.
const (
	prefill = 3 * time.Millisecond
	decode  = 7 * time.Millisecond
)

// engine is the fake engine plus what the real one reports and the fake does not: a lazy
// start (Loaded/Start), engine timings and prompt tokens served from the prefix cache.
type engine struct {
	*enginetest.Engine
	cached int
	loaded atomic.Bool
}

func (e *engine) Loaded() bool { return e.loaded.Load() }

func (e *engine) Start(context.Context) error {
	e.loaded.Store(true)
	return nil
}

func (e *engine) Generate(ctx context.Context, req *llm.Request, emit func(llm.Event) error) error {
	return e.Engine.Generate(ctx, req, func(ev llm.Event) error {
		if ev.Done != nil {
			d := *ev.Done
			d.Usage.CachedTokens = min(e.cached, d.Usage.PromptTokens)
			d.Timings = llm.Timings{Prefill: prefill, Decode: decode}
			ev.Done = &d
		}
		return emit(ev)
	})
}

// config describes one test server; the zero value is a 4096-token fake replying "Hello world!"
// with a ChatML template, backed by a tiny Q8_0 llama GGUF file for the metadata routes.
type config struct {
	reply    string
	template string // the chat template; "" is chatML
	cached   int
	fim      bool                     // the model has fill-in-the-middle markers
	queue    int                      // the core\'s --queue
	fake     func(*enginetest.Engine) // adjusts the fake (delays, failures) before serving
	model    func(*core.Model)        // adjusts the model (its projector facts) before serving
}

type fixture struct {
	srv    *httptest.Server
	st     *store.Store
	eng    *engine
	model  *core.Model
	client *api.Client
}

func setup(t testing.TB, cfg config) *fixture {
	t.Helper()
	if cfg.reply == "" {
		cfg.reply = defaultReply
	}
	src := cmp.Or(cfg.template, chatML)
	dir := t.TempDir()
	st := servertest.Store(t)
	path := filepath.Join(dir, "fake.gguf")
	if err := gguftest.WriteTinyLlama(path, gguftest.TinyLlamaOptions{Q8: true, ChatTemplate: src, ContextLength: 4096}); err != nil {
		t.Fatalf("write model: %v", err)
	}
	tmpl, err := chat.Parse(src)
	if err != nil {
		t.Fatalf("parse template: %v", err)
	}
	fake := enginetest.New(4096, cfg.reply)
	if cfg.fake != nil {
		cfg.fake(fake)
	}
	eng := &engine{Engine: fake, cached: cfg.cached}
	m := &core.Model{
		ID: "fake", Path: path, Engine: eng, Template: tmpl, ContextLength: 4096, Architecture: "llama",
		Size: fileSize(t, path), Created: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC),
	}
	if cfg.fim {
		m.FIM = &core.FIMTokens{Prefix: fimPrefix, Suffix: fimPrefix + 1, Middle: fimPrefix + 2}
	}
	if cfg.model != nil {
		cfg.model(m)
	}
	svc := core.New(core.Config{Queue: cfg.queue}, st, m)
	srv := httptest.NewServer(server.New(server.Config{}, svc))
	t.Cleanup(srv.Close) // before the store closes: in-flight requests record first
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{srv: srv, st: st, eng: eng, model: m, client: api.NewClient(u, http.DefaultClient)}
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// do sends a request with a raw body and returns the response with its body read.
func (f *fixture) do(t *testing.T, method, path, body string) (*http.Response, []byte) {
	t.Helper()
	return servertest.Do(t, method, f.srv.URL+path, body)
}

// checkError asserts an Ollama error response: the status, JSON, exactly one key "error"
// holding a non-empty string that contains msg.
func checkError(t *testing.T, resp *http.Response, b []byte, status int, msg string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Errorf("status = %d, want %d; body %s", resp.StatusCode, status, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("error body is not a JSON object: %v: %s", err, b)
	}
	e, ok := body["error"].(string)
	if len(body) != 1 || !ok || e == "" {
		t.Fatalf(`error body is not {"error": "..."}: %s`, b)
	}
	if !strings.Contains(e, msg) {
		t.Errorf("error = %q, want it to contain %q", e, msg)
	}
}

// lines splits an NDJSON body into its lines, each checked to be a JSON object.
func lines(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	if !strings.HasSuffix(string(body), "\n") {
		t.Errorf("NDJSON body does not end with a newline: %q", body)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(string(body), "\n"), "\n") {
		var obj map[string]any
		if err := json.Unmarshal([]byte(l), &obj); err != nil {
			t.Fatalf("NDJSON line is not a JSON object: %v: %q", err, l)
		}
		out = append(out, obj)
	}
	return out
}

// lastRequest is the engine request of the latest generation.
func (f *fixture) lastRequest(t *testing.T) llm.Request {
	t.Helper()
	reqs := f.eng.Requests()
	if len(reqs) == 0 {
		t.Fatal("the engine saw no request")
	}
	return reqs[len(reqs)-1]
}

func ptr[T any](v T) *T { return &v }
