package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/server/batches"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/store"
)

// smallBuffers gives every accepted connection a small send buffer, so that a client that
// stops reading blocks the server's writes after a few kilobytes instead of megabytes.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// stallServer serves a fake whose every reply is long (tens of thousands of frames), with
// one lane and a queue of 67: 68 generations at once, as the 4 lanes + 64 queued. It
// keeps files too (for downloads); setup, when given, sees the server before it starts.
func stallServer(t *testing.T, cfg Config, setup ...func(*httptest.Server)) (*httptest.Server, *store.Store) {
	t.Helper()
	st := servertest.Store(t)
	tmpl, err := chat.Parse("")
	if err != nil {
		t.Fatal(err)
	}
	const window = 1 << 16
	eng := enginetest.New(window, strings.Repeat("stall ", 8000))
	svc := core.New(core.Config{Queue: 67}, st,
		&core.Model{ID: "fake", Path: "/m/fake.gguf", Engine: eng, Template: tmpl, ContextLength: window})
	cfg.Batches = batches.New(batches.Config{Files: batches.FilesConfig{Dir: t.TempDir()}}, svc, st)
	srv := httptest.NewUnstartedServer(New(cfg, svc))
	srv.Listener = smallBuffers{srv.Listener}
	for _, f := range setup {
		f(srv)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, st
}

// stall opens a connection with a small receive buffer, sends a streaming request on it and
// never reads the reply.
func stall(t *testing.T, addr, path, body string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.(*net.TCPConn).SetReadBuffer(4096)
	req := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, addr, len(body), body)
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestStalledReadersAreDropped: 100 clients send a streaming request and stop reading. With a
// write deadline on every frame, their handlers give up, their lanes and queue places free
// up, a new request is answered, and each stalled request is recorded as a client disconnect
// (those beyond the lanes and the queue were refused with 429 at once). Without the deadline
// the stalled writes block forever and every new request is a 429. The same holds with
// --nonstream-keepalive on, whose writer sits between the stream and the connection.
func TestStalledReadersAreDropped(t *testing.T) {
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	cases := []struct{ name, path, body string }{
		{"openai chat", "/v1/chat/completions", `{"model":"fake","stream":true,` + msgs + `}`},
		{"openai completions", "/v1/completions", `{"model":"fake","stream":true,"prompt":"hi","max_tokens":40000}`},
		{"openai responses", "/v1/responses", `{"model":"fake","stream":true,"store":false,"input":"hi"}`},
		{"anthropic messages", "/v1/messages", `{"model":"fake","stream":true,"max_tokens":40000,` + msgs + `}`},
		{"ollama chat (NDJSON)", "/api/chat", `{"model":"fake",` + msgs + `}`},
		{"ollama generate (NDJSON)", "/api/generate", `{"model":"fake","prompt":"hi"}`},
	}
	for _, keepalive := range []time.Duration{0, time.Hour} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/nonstream-keepalive=%s", tc.name, keepalive), func(t *testing.T) {
				stalledReaders(t, Config{WriteTimeout: 200 * time.Millisecond, NonstreamKeepalive: keepalive}, tc.path, tc.body)
			})
		}
	}
}

// stalledReaders is one case of TestStalledReadersAreDropped: 100 stalled clients of path.
func stalledReaders(t *testing.T, cfg Config, path, body string) {
	t.Helper()
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	srv, st := stallServer(t, cfg)
	addr := srv.Listener.Addr().String()
	const clients = 100
	for range clients {
		c := stall(t, addr, path, body)
		defer c.Close()
	}
	deadline := time.Now().Add(time.Minute) // generous: the test never waits this long when it passes
	for {
		// The probe's own reply has the 200 ms write deadline too: on a loaded machine it may be
		// cut (an EOF), which is the deadline working, not the stalled readers holding on; only
		// a probe answered in the end shows the lanes came free.
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"fake","max_tokens":5,`+msgs+`}`))
		var got []byte
		if err == nil {
			got, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		if err == nil && resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) || (err == nil && resp.StatusCode != http.StatusTooManyRequests) {
			status := 0
			if resp != nil {
				status = resp.StatusCode
			}
			t.Fatalf("a new request behind %d stalled readers: %d %s %v", clients, status, got, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Every stalled request is recorded: refused (429), or dropped as a disconnect (499).
	var recs []store.RequestRecord
	for {
		all, err := st.RecentRequests(context.Background(), 1000)
		if err != nil {
			t.Fatal(err)
		}
		recs = recs[:0]
		for _, r := range all {
			if r.Endpoint == path && r.Stream { // not the probes
				recs = append(recs, r)
			}
		}
		if len(recs) == clients {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d stalled requests recorded", len(recs), clients)
		}
		time.Sleep(20 * time.Millisecond)
	}
	dropped := 0
	for _, r := range recs {
		switch {
		case r.Status == 499 && r.ClientDisconnected:
			dropped++
		case r.Status == http.StatusTooManyRequests && !r.ClientDisconnected:
		default:
			t.Errorf("stalled request %s recorded as status %d, client_disconnected %v (%s)", r.ID, r.Status, r.ClientDisconnected, r.Error)
		}
	}
	if dropped < 68 {
		t.Errorf("%d stalled requests recorded as client disconnects; want at least the 68 lanes and queue places", dropped)
	}
}

// TestDeadlineLiftedForNextRequest: a stream leaves its last frame's write deadline on the
// connection (it bounds the end of the reply); the next request on the same kept-alive
// connection must not inherit it. net/http clears it after each reply; this guards that.
func TestDeadlineLiftedForNextRequest(t *testing.T) {
	const timeout = 50 * time.Millisecond
	srv, _ := stallServer(t, Config{WriteTimeout: timeout})
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	send := func(body string, reuse bool) {
		t.Helper()
		var reused bool
		ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }})
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/chat/completions", strings.NewReader(body))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("request (reused connection: %v): %v", reused, err)
		}
		defer resp.Body.Close()
		if _, err := io.ReadAll(resp.Body); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%d, read: %v", resp.StatusCode, err)
		}
		if reused != reuse {
			t.Fatalf("connection reused: %v, want %v", reused, reuse)
		}
	}
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	send(`{"model":"fake","stream":true,"max_tokens":3,`+msgs+`}`, false)
	time.Sleep(4 * timeout) // the stream's last deadline passes while the connection is idle
	send(`{"model":"fake","max_tokens":3,`+msgs+`}`, true)
	send(`{"model":"fake","stream":true,"max_tokens":3,`+msgs+`}`, true)
}
