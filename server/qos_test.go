package server_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/store"
)

// The keys of the policy servers: an admin; "bg", allowed classes up to agent; "rpm", 2
// requests a minute; "tok", 50 tokens a minute; "one", one request at once; "free", no limit.
const (
	keyAdmin = "sk-sf-qos-admin"
	keyBG    = "sk-sf-qos-bg"
	keyRPM   = "sk-sf-qos-rpm"
	keyTok   = "sk-sf-qos-tok"
	keyOne   = "sk-sf-qos-one"
	keyFree  = "sk-sf-qos-free"
)

const qosPolicy = `{"keys": [
	{"name": "admin", "key": "sk-sf-qos-admin", "admin": true},
	{"name": "bg", "key": "sk-sf-qos-bg", "qos": "agent"},
	{"name": "rpm", "key": "sk-sf-qos-rpm", "rpm": 2},
	{"name": "tok", "key": "sk-sf-qos-tok", "tpm": 50},
	{"name": "one", "key": "sk-sf-qos-one", "concurrency": 1},
	{"name": "free", "key": "sk-sf-qos-free"}]}`

// policyServer is a server with the keys above over one fake model, "m1", whose generations
// wait at the core's gate (QoSConfig.Gate) and, when their prompt says "hold", until release.
type policyServer struct {
	srv    *httptest.Server
	eng    *heldEngine
	model  *core.Model
	store  *store.Store
	keys   *auth.Keyring
	limits *server.Limits
	clock  *fakeClock
}

// heldEngine holds the generations whose prompt contains "hold" until release is closed.
type heldEngine struct {
	*enginetest.Engine
	release chan struct{}
	held    atomic.Int64 // generations held so far
}

func (e *heldEngine) Generate(ctx context.Context, req *llm.Request, emit func(llm.Event) error) error {
	if strings.Contains(req.Prompt, "hold") {
		e.held.Add(1)
		select {
		case <-e.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return e.Engine.Generate(ctx, req, emit)
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// setupPolicy starts a policy server; cfg's Keys and Limits are filled in (perIP requests a
// minute per address, on the test's clock).
func setupPolicy(t *testing.T, cfg server.Config, perIP int, configure func(*enginetest.Engine)) *policyServer {
	t.Helper()
	keys, err := auth.ParsePolicy([]byte(qosPolicy))
	if err != nil {
		t.Fatal(err)
	}
	p := &policyServer{clock: &fakeClock{t: time.Unix(1_800_000_000, 0)}, store: servertest.Store(t)}
	if p.keys, err = auth.New(context.Background(), auth.Config{Keys: keys}); err != nil {
		t.Fatal(err)
	}
	fake := enginetest.New(512, "Once upon a time")
	if configure != nil {
		configure(fake)
	}
	p.eng = &heldEngine{Engine: fake, release: make(chan struct{})}
	tmpl, _ := chat.Parse("")
	p.model = &core.Model{ID: "m1", Path: "/m/m1.gguf", Engine: p.eng, Template: tmpl}
	svc := core.New(core.Config{QoS: core.QoSConfig{Gate: true}}, p.store, p.model)
	p.limits = server.NewLimits(server.LimitsConfig{PerIP: perIP, Now: p.clock.now})
	cfg.Keys, cfg.Limits = p.keys, p.limits
	p.srv = httptest.NewServer(server.New(cfg, svc))
	t.Cleanup(p.srv.Close)
	t.Cleanup(p.unhold)
	return p
}

func (p *policyServer) unhold() {
	select {
	case <-p.eng.release:
	default:
		close(p.eng.release)
	}
}

func (p *policyServer) openai(key string, opts ...option.RequestOption) *openai.Client {
	c := openai.NewClient(append([]option.RequestOption{option.WithBaseURL(p.srv.URL + "/v1"), option.WithAPIKey(key), option.WithMaxRetries(0)}, opts...)...)
	return &c
}

func (p *policyServer) anthropic(key string, opts ...aoption.RequestOption) *anthropic.Client {
	c := anthropic.NewClient(append([]aoption.RequestOption{aoption.WithBaseURL(p.srv.URL), aoption.WithAPIKey(key), aoption.WithMaxRetries(0)}, opts...)...)
	return &c
}

// chat sends one non-streaming chat request through openai-go.
func (p *policyServer) chat(key, prompt string, opts ...option.RequestOption) (*openai.ChatCompletion, error) {
	return p.openai(key, opts...).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "m1",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}})
}

// waitFor polls until cond holds (the server works in other goroutines).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSchedulingHeaders: through openai-go with option.WithHeader, a known class within the
// key's ceiling is served (background reaches the engine at background priority); an unknown
// class is 400, one above the ceiling 403 admin_required, and x-superfluid-batch-invariant is
// 400 naming the flag unless the server has --http-allow-batch-invariant.
func TestSchedulingHeaders(t *testing.T) {
	closed := setupPolicy(t, server.Config{}, 0, nil)
	open := setupPolicy(t, server.Config{AllowBatchInvariant: true}, 0, nil)
	tests := []struct {
		name      string
		srv       *policyServer
		key       string
		headers   map[string]string
		status    int
		code      string
		message   string
		wantClass llm.Priority
	}{
		{"no header", closed, keyBG, nil, 200, "", "", llm.PriorityInteractive},
		{"at the ceiling", closed, keyBG, map[string]string{"x-superfluid-qos": "agent"}, 200, "", "", llm.PriorityInteractive},
		{"below the ceiling", closed, keyBG, map[string]string{"x-superfluid-qos": "Background"}, 200, "", "", llm.PriorityBackground},
		{"no ceiling", closed, keyFree, map[string]string{"x-superfluid-qos": "interactive"}, 200, "", "", llm.PriorityInteractive},
		{"above the ceiling", closed, keyBG, map[string]string{"x-superfluid-qos": "interactive"}, 403, "admin_required", "up to agent", 0},
		{"completion above agent", closed, keyBG, map[string]string{"x-superfluid-qos": "completion"}, 403, "admin_required", "up to agent", 0},
		{"an unknown class", closed, keyFree, map[string]string{"x-superfluid-qos": "urgent"}, 400, "", "interactive, completion, agent or background", 0},
		{"batch-invariant without the flag", closed, keyAdmin, map[string]string{"x-superfluid-batch-invariant": "1"}, 400, "", "--http-allow-batch-invariant", 0},
		{"batch-invariant off without the flag", closed, keyAdmin, map[string]string{"x-superfluid-batch-invariant": "false"}, 200, "", "", llm.PriorityInteractive},
		{"batch-invariant neither on nor off", open, keyAdmin, map[string]string{"x-superfluid-batch-invariant": "maybe"}, 400, "", "neither on", 0},
		{"batch-invariant with the flag", open, keyAdmin, map[string]string{"x-superfluid-batch-invariant": "true", "x-superfluid-qos": "background"}, 200, "", "", llm.PriorityBackground},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []option.RequestOption
			for k, v := range tt.headers {
				opts = append(opts, option.WithHeader(k, v))
			}
			before := len(tt.srv.eng.Requests())
			res, err := tt.srv.chat(tt.key, "hi", opts...)
			if tt.status == 200 {
				if err != nil || res.Choices[0].Message.Content != "Once upon a time" {
					t.Fatalf("%v %v", res, err)
				}
				reqs := tt.srv.eng.Requests()
				if got := reqs[len(reqs)-1].Priority; got != tt.wantClass {
					t.Fatalf("engine priority %v, want %v", got, tt.wantClass)
				}
				return
			}
			var e *openai.Error
			if !errors.As(err, &e) || e.StatusCode != tt.status || e.Code != tt.code || !strings.Contains(e.Message, tt.message) {
				t.Fatalf("got %v, want %d %q %q", err, tt.status, tt.code, tt.message)
			}
			if len(tt.srv.eng.Requests()) != before {
				t.Fatal("a refused request reached the engine")
			}
		})
	}
}

// TestQoSAboveCeilingEachDialect: a class above the key's ceiling is 403 in the shape of each
// dialect: OpenAI's admin_required, Anthropic's permission_error, Ollama's {"error"}.
func TestQoSAboveCeilingEachDialect(t *testing.T) {
	p := setupPolicy(t, server.Config{}, 0, nil)
	_, err := p.anthropic(keyBG, aoption.WithHeader("x-superfluid-qos", "interactive")).Messages.New(context.Background(),
		anthropic.MessageNewParams{Model: "m1", MaxTokens: 8, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 403 || !strings.Contains(ae.RawJSON(), `"permission_error"`) {
		t.Fatalf("anthropic: %v", err)
	}
	resp, body := servertest.Do(t, "POST", p.srv.URL+"/api/chat", `{"model":"m1","stream":false,"messages":[{"role":"user","content":"hi"}]}`,
		"Authorization", "Bearer "+keyBG, "X-Superfluid-Qos", "interactive")
	if resp.StatusCode != 403 || !strings.HasPrefix(string(body), `{"error":"the API key \"bg\" may ask for scheduling classes up to agent`) {
		t.Fatalf("ollama: %d %s", resp.StatusCode, body)
	}
}

// TestQoSOrder: on a busy one-lane model, a background request that waits is passed by an
// interactive one that comes after it: the gate grants by the x-superfluid-qos class.
func TestQoSOrder(t *testing.T) {
	p := setupPolicy(t, server.Config{}, 0, func(e *enginetest.Engine) { e.Lanes = 1 })
	var wg sync.WaitGroup
	send := func(prompt, class string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := p.chat(keyFree, prompt, option.WithHeader("x-superfluid-qos", class)); err != nil {
				t.Error(err)
			}
		}()
	}
	send("hold: the first", "background")
	waitFor(t, "the first request on the lane", func() bool { return p.eng.held.Load() == 1 })
	send("background", "background")
	waitFor(t, "the background request waiting", func() bool { return p.model.Waiting() == 1 })
	send("interactive", "interactive")
	waitFor(t, "the interactive request waiting", func() bool { return p.model.Waiting() == 2 })
	p.unhold()
	wg.Wait()
	var order []string
	for _, r := range p.eng.Requests() {
		switch {
		case strings.Contains(r.Prompt, "hold"):
			order = append(order, "first")
		case strings.Contains(r.Prompt, "interactive"):
			order = append(order, "interactive")
		default:
			order = append(order, "background")
		}
	}
	if strings.Join(order, ",") != "first,interactive,background" {
		t.Fatalf("the engine ran %v", order)
	}
	if err := p.store.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs, err := p.store.RecentRequests(context.Background(), 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Status != 200 || r.KeyName != "free" || r.KeyID != "policy:free" {
			t.Fatalf("record %+v", r)
		}
	}
}
