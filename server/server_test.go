package server

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/server/core"
)

// TestUnroutedErrorShapes: requests no handler takes are answered in the shape of the dialect
// their path belongs to.
func TestUnroutedErrorShapes(t *testing.T) {
	tmpl, _ := chat.Parse("")
	svc := core.New(core.Config{}, nil, &core.Model{ID: "fake", Path: "/m/fake.gguf", Engine: enginetest.New(64, "x"), Template: tmpl})
	srv := httptest.NewServer(New(Config{}, svc))
	defer srv.Close()
	cases := []struct {
		method, path string
		status       int
		check        func(map[string]any) bool
	}{
		{"GET", "/v1/nope", 404, func(b map[string]any) bool {
			e, _ := b["error"].(map[string]any)
			return e["type"] == "invalid_request_error" && strings.Contains(e["message"].(string), "/v1/nope")
		}},
		{"GET", "/api/nope", 404, func(b map[string]any) bool { s, _ := b["error"].(string); return strings.Contains(s, "/api/nope") }},
		{"GET", "/v1/messages/batches", 404, func(b map[string]any) bool {
			e, _ := b["error"].(map[string]any)
			return b["type"] == "error" && e["type"] == "not_found_error"
		}},
		{"PUT", "/v1/chat/completions", 405, func(b map[string]any) bool {
			e, _ := b["error"].(map[string]any)
			return e["type"] == "invalid_request_error"
		}},
		{"DELETE", "/api/chat", 405, func(b map[string]any) bool { _, ok := b["error"].(string); return ok }},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		if res.StatusCode != c.status || !c.check(body) {
			t.Errorf("%s %s: %d %v", c.method, c.path, res.StatusCode, body)
		}
	}
}

// syncBuffer is a log destination safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestPanicValueStaysInTheLog: a handler that panics is answered with the dialect's generic
// 500 carrying an id, never the panic's value; the log has the value under that id.
func TestPanicValueStaysInTheLog(t *testing.T) {
	var log syncBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&log, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })

	const secret = "sk-sf-secret-in-a-panic /home/alice/private.gguf"
	tmpl, _ := chat.Parse("")
	svc := core.New(core.Config{}, nil, &core.Model{ID: "fake", Path: "/m/fake.gguf", Engine: enginetest.New(64, "x"), Template: tmpl})
	r := New(Config{}, svc).(*gin.Engine)
	boom := func(*gin.Context) { panic(secret) }
	r.POST("/v1/test/panic", boom)
	r.POST("/v1/messages/test/panic", boom)
	r.POST("/api/test/panic", boom)
	srv := httptest.NewServer(r)
	defer srv.Close()
	id := regexp.MustCompile(`panic-[0-9a-f]{12}`)
	cases := []struct {
		path  string
		check func(map[string]any) (string, bool)
	}{
		{"/v1/test/panic", func(b map[string]any) (string, bool) {
			e, _ := b["error"].(map[string]any)
			m, _ := e["message"].(string)
			return m, e["type"] == "server_error"
		}},
		{"/v1/messages/test/panic", func(b map[string]any) (string, bool) {
			e, _ := b["error"].(map[string]any)
			m, _ := e["message"].(string)
			return m, b["type"] == "error" && e["type"] == "api_error"
		}},
		{"/api/test/panic", func(b map[string]any) (string, bool) { m, ok := b["error"].(string); return m, ok }},
	}
	for _, c := range cases {
		res, err := http.Post(srv.URL+c.path, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		msg, shaped := c.check(body)
		if res.StatusCode != http.StatusInternalServerError || !shaped || strings.Contains(string(raw), "secret") ||
			strings.Contains(string(raw), "alice") || !strings.HasPrefix(msg, "internal error") {
			t.Fatalf("%s: %d %s", c.path, res.StatusCode, raw)
		}
		pid := id.FindString(msg)
		if pid == "" {
			t.Fatalf("%s: no id in %q", c.path, msg)
		}
		var logged bool
		for _, line := range strings.Split(log.String(), "\n") {
			logged = logged || strings.Contains(line, pid) && strings.Contains(line, "sk-sf-secret-in-a-panic")
		}
		if !logged {
			t.Fatalf("%s: the log has no line with %s and the panic's value:\n%s", c.path, pid, log.String())
		}
	}
	// The server is still up.
	if res, err := http.Get(srv.URL + "/health"); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("after the panics: %v %v", res, err)
	}
}

// TestPanicAfterKeepaliveCommit: with --nonstream-keepalive, a handler that panics after its
// request was admitted (200 and the padding sent) ends with the error JSON after the spaces,
// and the padding's ticker stops with it: nothing is left running per panic.
func TestPanicAfterKeepaliveCommit(t *testing.T) {
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	tmpl, _ := chat.Parse("")
	svc := core.New(core.Config{}, nil, &core.Model{ID: "fake", Path: "/m/fake.gguf", Engine: enginetest.New(64, "x"), Template: tmpl})
	r := New(Config{NonstreamKeepalive: 5 * time.Millisecond}, svc).(*gin.Engine)
	r.POST("/v1/test/panic", func(c *gin.Context) {
		pw, ok := c.Writer.(*paddedWriter)
		if !ok {
			c.String(http.StatusTeapot, "the writer is a %T, not the padding's", c.Writer)
			return
		}
		pw.commit() // what the core's admission hook does
		time.Sleep(20 * time.Millisecond)
		panic("boom")
	})
	srv := httptest.NewServer(r)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	defer client.CloseIdleConnections()
	base := runtime.NumGoroutine()
	const n = 20
	for range n {
		res, err := client.Post(srv.URL+"/v1/test/panic", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.HasPrefix(string(b), " ") || !strings.Contains(string(b), "internal error (id panic-") {
			t.Fatalf("%d %q", res.StatusCode, b)
		}
	}
	deadline := time.Now().Add(30 * time.Second) // generous: a pass returns at once
	for runtime.NumGoroutine() > base+n/2 {
		if time.Now().After(deadline) {
			t.Fatalf("goroutines %d → %d after %d panics: the padding's tickers outlived their requests", base, runtime.NumGoroutine(), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
