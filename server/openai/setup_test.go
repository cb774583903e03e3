package openai_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/store"
)

// chatML is a minimal ChatML template, the shape most instruct models ship.
const chatML = `{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`

// config describes one test server; the zero value is a 4096-token fake replying "Hello world!".
type config struct {
	ctx       int                      // context window of the fake, in tokens (bytes)
	reply     string                   // what the fake says
	template  string                   // chat template source; "" is the fallback
	keepAlive time.Duration            // SSE keep-alive interval; 0 disables
	maxTokens int                      // the operator's --max-tokens
	engine    func(*enginetest.Engine) // adjusts the fake (delays, failures) before serving
	model     func(*core.Model)        // adjusts the model (its projector facts) before serving
}

// fixture is a running server: the real router and core over the fake engine and a real store.
type fixture struct {
	srv    *httptest.Server
	st     *store.Store
	eng    *enginetest.Engine
	tmpl   *chat.Template
	client openai.Client
}

const defaultReply = "Hello world!"

func setup(t testing.TB, cfg config) *fixture {
	t.Helper()
	if cfg.ctx == 0 {
		cfg.ctx = 4096
	}
	if cfg.reply == "" {
		cfg.reply = defaultReply
	}
	st := servertest.Store(t)
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
	svc := core.New(core.Config{MaxTokens: cfg.maxTokens}, st, m)
	srv := httptest.NewServer(server.New(server.Config{KeepAlive: cfg.keepAlive}, svc))
	t.Cleanup(srv.Close) // runs before the store closes: in-flight requests record first
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	return &fixture{srv: srv, st: st, eng: eng, tmpl: tmpl, client: client}
}

// do sends a request with a raw body and returns the response with its body read.
func (f *fixture) do(t *testing.T, method, path, body string) (*http.Response, []byte) {
	t.Helper()
	return servertest.Do(t, method, f.srv.URL+path, body)
}

// apiError is an OpenAI error body; Param and Code are "" when the wire has null.
type apiError struct {
	Message, Type, Param, Code string
}

// wantError is what a test expects of an error response; msg is a substring of the message.
type wantError struct {
	status           int
	typ, param, code string
	msg              string
}

// parseError decodes an OpenAI error body strictly: all four keys present, message and type
// non-empty strings, param and code a non-empty string or null.
func parseError(t *testing.T, b []byte) apiError {
	t.Helper()
	var env map[string]json.RawMessage
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("error body is not a JSON object: %v\n%s", err, b)
	}
	var fields map[string]any
	if err := json.Unmarshal(env["error"], &fields); err != nil || fields == nil {
		t.Fatalf("error body has no error object: %s", b)
	}
	var e apiError
	for key, dst := range map[string]*string{"message": &e.Message, "type": &e.Type, "param": &e.Param, "code": &e.Code} {
		v, ok := fields[key]
		if !ok {
			t.Fatalf("error object lacks %q: %s", key, b)
		}
		switch v := v.(type) {
		case nil:
			if key == "message" || key == "type" {
				t.Fatalf("error.%s is null: %s", key, b)
			}
		case string:
			if v == "" {
				t.Fatalf("error.%s is an empty string (want text or null): %s", key, b)
			}
			*dst = v
		default:
			t.Fatalf("error.%s is %T, want a string: %s", key, v, b)
		}
	}
	return e
}

// checkError asserts status, content type and every field of an OpenAI error response.
func checkError(t *testing.T, resp *http.Response, b []byte, want wantError) {
	t.Helper()
	if resp.StatusCode != want.status {
		t.Errorf("status = %d, want %d; body %s", resp.StatusCode, want.status, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	e := parseError(t, b)
	if e.Type != want.typ {
		t.Errorf("error.type = %q, want %q", e.Type, want.typ)
	}
	if e.Param != want.param {
		t.Errorf("error.param = %q, want %q (\"\" is null)", e.Param, want.param)
	}
	if e.Code != want.code {
		t.Errorf("error.code = %q, want %q (\"\" is null)", e.Code, want.code)
	}
	if !strings.Contains(e.Message, want.msg) {
		t.Errorf("error.message = %q, want it to contain %q", e.Message, want.msg)
	}
}

// chatBody is a minimal valid chat request with extra top-level fields merged in.
func chatBody(extra string) string {
	b := `{"model":"fake","messages":[{"role":"user","content":"Say hello."}]`
	if extra != "" {
		b += "," + extra
	}
	return b + "}"
}

// events is a parsed SSE body: the data payloads in order and the comment lines.
type events struct {
	data     []string
	comments []string
}

// parseSSE splits an SSE body into frames and checks each is a comment or one data line.
func parseSSE(t *testing.T, body []byte) events {
	t.Helper()
	var ev events
	if !bytes.HasSuffix(body, []byte("\n\n")) {
		t.Errorf("SSE body does not end with a blank line: %q", tail(body))
	}
	for _, frame := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		switch {
		case strings.HasPrefix(frame, ":"):
			ev.comments = append(ev.comments, frame)
		case strings.HasPrefix(frame, "data: ") && !strings.Contains(frame, "\n"):
			ev.data = append(ev.data, strings.TrimPrefix(frame, "data: "))
		default:
			t.Errorf("unexpected SSE frame %q", frame)
		}
	}
	return ev
}

func tail(b []byte) []byte { return b[max(0, len(b)-80):] }

// streamChunk is the part of a chunk the raw tests read.
type streamChunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
	Superfluid *struct {
		Warm *int `json:"warm"`
	} `json:"superfluid"`
	Error json.RawMessage `json:"error"`
}

func decodeChunk(t *testing.T, data string) streamChunk {
	t.Helper()
	var c streamChunk
	if err := json.Unmarshal([]byte(data), &c); err != nil {
		t.Fatalf("chunk is not JSON: %v: %s", err, data)
	}
	return c
}

// readFrames reads SSE data payloads from r as they arrive, sending each on the channel
// (comments are skipped); the channel closes at the end of the body.
func readFrames(r io.Reader) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				ch <- data
			}
		}
	}()
	return ch
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
