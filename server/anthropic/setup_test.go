package anthropic_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/store"
)

// chatML is a minimal ChatML template, the shape most instruct models ship.
const chatML = `{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`

const defaultReply = "Hello world!"

// userHello is the prompt most tests send.
const userHello = "Say hello."

// config describes one test server; the zero value is a 4096-token fake replying "Hello world!"
// with the ChatML template.
type config struct {
	ctx       int                      // context window of the fake, in tokens (bytes)
	reply     string                   // what the fake says
	template  string                   // the chat template; "" is chatML
	keepAlive time.Duration            // SSE keep-alive interval; 0 disables
	queue     int                      // the operator's --queue; 0 is unbounded
	engine    func(*enginetest.Engine) // adjusts the fake (delays, failures) before serving
	model     func(*core.Model)        // adjusts the model (its projector facts) before serving
}

// fixture is a running server: the real router and core over the fake engine and a real store.
type fixture struct {
	srv    *httptest.Server
	st     *store.Store
	eng    *enginetest.Engine
	client anthropic.Client
}

func setup(t testing.TB, cfg config) *fixture {
	t.Helper()
	if cfg.ctx == 0 {
		cfg.ctx = 4096
	}
	if cfg.reply == "" {
		cfg.reply = defaultReply
	}
	st := servertest.Store(t)
	if cfg.template == "" {
		cfg.template = chatML
	}
	tmpl, err := chat.Parse(cfg.template)
	if err != nil {
		t.Fatalf("parse template: %v", err)
	}
	eng := enginetest.New(cfg.ctx, cfg.reply)
	if cfg.engine != nil {
		cfg.engine(eng)
	}
	m := &core.Model{ID: "fake", Path: "/models/fake.gguf", Engine: eng, Template: tmpl, ContextLength: cfg.ctx}
	if cfg.model != nil {
		cfg.model(m)
	}
	svc := core.New(core.Config{Queue: cfg.queue}, st, m)
	srv := httptest.NewServer(server.New(server.Config{KeepAlive: cfg.keepAlive}, svc))
	t.Cleanup(srv.Close) // runs before the store closes: in-flight requests record first
	client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("x"), option.WithMaxRetries(0))
	return &fixture{srv: srv, st: st, eng: eng, client: client}
}

// rendered is the ChatML prompt of a conversation (system first when non-empty).
func rendered(system string, turns ...string) string {
	var sb strings.Builder
	if system != "" {
		sb.WriteString("<|im_start|>system\n" + system + "<|im_end|>\n")
	}
	for i, t := range turns {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		sb.WriteString("<|im_start|>" + role + "\n" + t + "<|im_end|>\n")
	}
	return sb.String() + "<|im_start|>assistant\n"
}

// do sends a request with a raw body and returns the response with its body read.
func (f *fixture) do(t *testing.T, method, path, body string) (*http.Response, []byte) {
	t.Helper()
	return servertest.Do(t, method, f.srv.URL+path, body, "x-api-key", "x", "anthropic-version", "2023-06-01")
}

// wantError is what a test expects of an error response; msg is a substring of the message.
type wantError struct {
	status int
	typ    string
	msg    string
}

// apiError is an Anthropic error body.
type apiError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	RequestID string `json:"request_id"`
}

// parseError decodes an Anthropic error body strictly: type "error", error.type and
// error.message non-empty strings, and a request_id.
func parseError(t *testing.T, b []byte) apiError {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatalf("error body is not a JSON object: %v\n%s", err, b)
	}
	for _, k := range []string{"type", "error", "request_id"} {
		if _, ok := fields[k]; !ok {
			t.Fatalf("error body lacks %q: %s", k, b)
		}
	}
	var e apiError
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("error body: %v\n%s", err, b)
	}
	if e.Type != "error" || e.Error.Type == "" || e.Error.Message == "" || !strings.HasPrefix(e.RequestID, "req_") {
		t.Fatalf("error body %s", b)
	}
	return e
}

// checkError asserts status, content type, request id and every field of an error response.
func checkError(t *testing.T, resp *http.Response, b []byte, want wantError) {
	t.Helper()
	if resp.StatusCode != want.status {
		t.Errorf("status = %d, want %d; body %s", resp.StatusCode, want.status, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	e := parseError(t, b)
	if e.Error.Type != want.typ {
		t.Errorf("error.type = %q, want %q", e.Error.Type, want.typ)
	}
	if !strings.Contains(e.Error.Message, want.msg) {
		t.Errorf("error.message = %q, want it to contain %q", e.Error.Message, want.msg)
	}
	if id := resp.Header.Get("request-id"); id != e.RequestID {
		t.Errorf("request-id header %q, body request_id %q", id, e.RequestID)
	}
}

// body is a minimal valid Messages request with extra top-level fields merged in.
func body(extra string) string {
	b := `{"model":"fake","max_tokens":100,"messages":[{"role":"user","content":"` + userHello + `"}]`
	if extra != "" {
		b += "," + extra
	}
	return b + "}"
}

// event is one SSE frame: a named event with its data, or a comment.
type event struct {
	name, data string
	comment    bool
}

// parseSSE splits an SSE body into frames, checking each is a comment or an `event:` line
// followed by one `data:` line whose JSON type equals the event name.
func parseSSE(t *testing.T, b []byte) []event {
	t.Helper()
	if !strings.HasSuffix(string(b), "\n\n") {
		t.Errorf("SSE body does not end with a blank line: %q", b[max(0, len(b)-80):])
	}
	var out []event
	for _, frame := range strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n") {
		if strings.HasPrefix(frame, ":") {
			out = append(out, event{comment: true, data: frame})
			continue
		}
		lines := strings.Split(frame, "\n")
		name, ok1 := strings.CutPrefix(lines[0], "event: ")
		if len(lines) != 2 || !ok1 || !strings.HasPrefix(lines[1], "data: ") {
			t.Fatalf("unexpected SSE frame %q", frame)
		}
		data := strings.TrimPrefix(lines[1], "data: ")
		var typed struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(data), &typed); err != nil || typed.Type != name {
			t.Errorf("event %q carries type %q (%v): %s", name, typed.Type, err, data)
		}
		out = append(out, event{name: name, data: data})
	}
	return out
}

// wireBlock is one content block as the raw stream built it.
type wireBlock struct {
	start  map[string]json.RawMessage // the content_block_start's content_block
	deltas []map[string]json.RawMessage
}

// checkBlocks checks the block structure of a stream and returns its blocks: message_start
// first; block starts at consecutive indexes from 0, one open at a time, each delta and stop on
// the open block; ping right after the first start; message_delta and message_stop last.
func checkBlocks(t *testing.T, evs []event) []wireBlock {
	t.Helper()
	var blocks []wireBlock
	open := -1
	var names []string
	for _, e := range evs {
		if e.comment {
			continue
		}
		names = append(names, e.name)
		var ev struct {
			Index        *int                       `json:"index"`
			ContentBlock map[string]json.RawMessage `json:"content_block"`
			Delta        map[string]json.RawMessage `json:"delta"`
		}
		if err := json.Unmarshal([]byte(e.data), &ev); err != nil {
			t.Fatalf("%s: %v", e.data, err)
		}
		switch e.name {
		case "content_block_start":
			if open != -1 || ev.Index == nil || *ev.Index != len(blocks) {
				t.Fatalf("content_block_start %s while block %d is open, after %d blocks", e.data, open, len(blocks))
			}
			open = *ev.Index
			blocks = append(blocks, wireBlock{start: ev.ContentBlock})
		case "content_block_delta":
			if ev.Index == nil || *ev.Index != open {
				t.Fatalf("delta %s, open block %d", e.data, open)
			}
			blocks[open].deltas = append(blocks[open].deltas, ev.Delta)
		case "content_block_stop":
			if ev.Index == nil || *ev.Index != open {
				t.Fatalf("stop %s, open block %d", e.data, open)
			}
			open = -1
		}
	}
	if open != -1 {
		t.Errorf("block %d never stopped", open)
	}
	if len(names) < 5 || names[0] != "message_start" || names[1] != "content_block_start" || names[2] != "ping" ||
		names[len(names)-2] != "message_delta" || names[len(names)-1] != "message_stop" {
		t.Errorf("events %v", names)
	}
	return blocks
}

// str decodes a raw JSON string field ("" when absent).
func str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
