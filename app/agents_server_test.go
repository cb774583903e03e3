package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models"
)

// Model ids the agents are pointed at.
const (
	eotModel      = "agents-eot"      // the real worker on writeEOTModel's model: every reply ends at once
	scriptedModel = "agents-scripted" // the scripted engine: the test writes each reply
)

// agentServer is a real App on a real listener serving both models, every exchange logged.
type agentServer struct {
	URL    string
	script atomic.Pointer[func(prompt string) string]
	log    exchangeLog
}

// startAgentServer serves eotModel (a real worker of this test binary) and scriptedModel (a
// GGUF header with Qwen 3's template, so a real chat template, tool-call syntax and reasoning
// markers, over a scripted engine reached through Config.NewRunner) until the test ends.
func startAgentServer(t *testing.T) *agentServer {
	t.Helper()
	dir := t.TempDir()
	eotPath, scriptedPath := filepath.Join(dir, eotModel+".gguf"), filepath.Join(dir, scriptedModel+".gguf")
	writeEOTModel(t, eotPath, qwen25Template)
	writeEOTModel(t, scriptedPath, qwen3Template)
	s := &agentServer{}
	cfg := testConfig(t, "")
	cfg.ContextLength = agentWindow
	cfg.Parallel = 2
	cfg.ModelKeepAlive = -1
	// One token per byte, so the agents' ~80 KB prompts need a window well past 64k.
	const scriptedWindow = 1 << 22
	cfg.NewRunner = func(e *models.Entry, vocabOnly bool) models.Runner {
		if e.Path != scriptedPath {
			return nil
		}
		return enginetest.NewScripted(scriptedWindow, func(req *llm.Request) string {
			script := s.script.Load()
			if script == nil {
				return "No reply is scripted for this request."
			}
			return (*script)(req.Prompt)
		})
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	ctx := context.Background()
	for id, path := range map[string]string{eotModel: eotPath, scriptedModel: scriptedPath} {
		if _, err := a.Manager().Catalog().AddLocal(ctx, path, id); err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s.log.wrap(a.Handler())}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() }) // before a.Close: cleanups run last first
	s.URL = "http://" + l.Addr().String()
	return s
}

// setScript makes every scripted reply from now on script(prompt), the rendered prompt.
func (s *agentServer) setScript(script func(prompt string) string) { s.script.Store(&script) }

// exchange is one request the server answered.
type exchange struct {
	Method, Path string // Path holds the query too
	Header       http.Header
	Body         []byte
	Status       int
	Reply        []byte // the start of the reply body
}

// exchangeLog records every request and the start of its reply.
type exchangeLog struct {
	mu   sync.Mutex
	list []exchange
}

const keepReply = 64 << 10

func (l *exchangeLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rw := &recordingWriter{ResponseWriter: w}
		h.ServeHTTP(rw, r)
		l.mu.Lock()
		defer l.mu.Unlock()
		l.list = append(l.list, exchange{Method: r.Method, Path: r.URL.RequestURI(), Header: r.Header.Clone(),
			Body: body, Status: cmpStatus(rw.status), Reply: rw.reply.Bytes()})
	})
}

func cmpStatus(s int) int {
	if s == 0 {
		return http.StatusOK
	}
	return s
}

// since returns the exchanges from the n-th on.
func (l *exchangeLog) since(n int) []exchange {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]exchange(nil), l.list[min(n, len(l.list)):]...)
}

func (l *exchangeLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.list)
}

// recordingWriter keeps the status and the start of the body; Unwrap lets the server's
// http.ResponseController reach the connection (flushes, write deadlines) through it.
type recordingWriter struct {
	http.ResponseWriter
	status int
	reply  bytes.Buffer
}

func (w *recordingWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	if n := keepReply - w.reply.Len(); n > 0 {
		w.reply.Write(b[:min(n, len(b))])
	}
	return w.ResponseWriter.Write(b)
}

func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush flushes the writer below (for callers that assert http.Flusher).
func (w *recordingWriter) Flush() {
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// describe is one line per exchange (and the reply of each refused one), for failure output.
func describe(xs []exchange) string {
	var sb strings.Builder
	for _, x := range xs {
		fmt.Fprintf(&sb, "%s %s -> %d (%d-byte request)\n", x.Method, x.Path, x.Status, len(x.Body))
		if x.Status >= 400 {
			fmt.Fprintf(&sb, "    %s\n", clipText(string(x.Reply), 2000))
		}
	}
	return sb.String()
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// generations are the exchanges that asked a model for a reply at path (its query ignored).
func generations(xs []exchange, path string) []exchange {
	var out []exchange
	for _, x := range xs {
		if p, _, _ := strings.Cut(x.Path, "?"); x.Method == http.MethodPost && p == path {
			out = append(out, x)
		}
	}
	return out
}

// recordEnv, when set, makes the agent tests write the request bodies of each tool loop as
// golden fixtures (replayed by the dialects' agents_loop_replay_test.go):
// SUPERFLUID_AGENTS_RECORD=1 make gotest PKG=./app RUN=TestAgents
const recordEnv = "SUPERFLUID_AGENTS_RECORD"

// record writes xs as dir/prefix-N.json (the body, indented) and dir/prefix-N.headers.json
// (the headers, credentials left out), N from 1, when recordEnv asks.
func record(t *testing.T, dir, prefix string, xs []exchange) {
	t.Helper()
	if os.Getenv(recordEnv) == "" {
		return
	}
	for i, x := range xs {
		var body bytes.Buffer
		if err := json.Indent(&body, x.Body, "", " "); err != nil {
			t.Fatalf("request %d of the loop is not JSON: %v", i+1, err)
		}
		headers := map[string]string{}
		for k, v := range x.Header {
			switch strings.ToLower(k) {
			case "authorization", "x-api-key", "content-length", "accept-encoding", "connection":
				continue
			}
			headers[k] = strings.Join(v, ", ")
		}
		hb, err := json.MarshalIndent(headers, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		base := filepath.Join(dir, fmt.Sprintf("%s-%d", prefix, i+1))
		if err := errors.Join(os.WriteFile(base+".json", append(body.Bytes(), '\n'), 0o644),
			os.WriteFile(base+".headers.json", append(hb, '\n'), 0o644)); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %s.json (%s %s)", base, x.Method, x.Path)
	}
}
