package websession

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// dialWS opens /web/ws offering protocols (nil: the token pair).
func dialWS(t *testing.T, srv *httptest.Server, protocols []string, hdr http.Header) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	if protocols == nil {
		protocols = []string{Subprotocol, "token." + testToken}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/web/ws",
		&websocket.DialOptions{Subprotocols: protocols, HTTPHeader: hdr})
	if c != nil {
		c.SetReadLimit(4 * MaxFrame) // replies may quote a big frame's values
	}
	return c, resp, err
}

func mustDial(t *testing.T, srv *httptest.Server) *websocket.Conn {
	t.Helper()
	c, _, err := dialWS(t, srv, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

func send(t *testing.T, c *websocket.Conn, frame string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		t.Fatal(err)
	}
}

// next reads one frame as a generic object.
func next(t *testing.T, c *websocket.Conn) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("frame %s: %v", b, err)
	}
	return m
}

func errCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

func TestWSCallsAndBadFrames(t *testing.T) {
	_, srv, _ := startFake(t, Config{})
	c, resp, err := dialWS(t, srv, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if c.Subprotocol() != Subprotocol || resp.Header.Get("Sec-WebSocket-Protocol") != Subprotocol {
		t.Fatalf("subprotocol %q: the token must never be echoed", c.Subprotocol())
	}
	send(t, c, `{"id":1,"method":"models.list"}`)
	if m := next(t, c); m["id"] != 1.0 || m["result"] == nil {
		t.Fatalf("models.list: %v", m)
	}
	// A malformed frame gets an error reply; the socket stays open.
	for _, bad := range []string{`{not json`, `{"id":2}`, `[]`} {
		send(t, c, bad)
		if m := next(t, c); errCode(m) != CodeInvalidFrame {
			t.Fatalf("%s: %v", bad, m)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.Write(ctx, websocket.MessageBinary, []byte(`{"id":3,"method":"models.list"}`))
	if m := next(t, c); errCode(m) != CodeInvalidFrame {
		t.Fatalf("binary frame: %v", m)
	}
	send(t, c, `{"id":4,"method":"no.such"}`)
	if m := next(t, c); errCode(m) != CodeUnknownMethod || m["id"] != 4.0 {
		t.Fatalf("unknown method: %v", m)
	}
	send(t, c, `{"id":5,"method":"cancel"}`)
	if m := next(t, c); errCode(m) != CodeNotFound {
		t.Fatalf("cancel of nothing: %v", m)
	}
	send(t, c, `{"id":6,"method":"models.load","params":{"model":"tiny"}}`)
	if m := next(t, c); m["id"] != 6.0 || m["result"].(map[string]any)["state"] != "loaded" {
		t.Fatalf("after bad frames: %v", m)
	}
	// A frame just under 1 MiB is read (and answered); one over it closes the socket with 1009.
	send(t, c, `{"id":8,"method":"models.load","params":{"model":"`+strings.Repeat("m", MaxFrame-100)+`"}}`)
	if m := next(t, c); m["id"] != 8.0 || errCode(m) != CodeNotFound {
		t.Fatalf("a frame under 1 MiB: %v", errCode(m))
	}
	send(t, c, `{"id":7,"method":"chat","params":{"x":"`+strings.Repeat("a", MaxFrame)+`"}}`)
	_, _, err = c.Read(ctx)
	if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Fatalf("after a frame over 1 MiB: %v (status %d)", err, websocket.CloseStatus(err))
	}
}

func TestWSAuth(t *testing.T) {
	_, srv, h := startFake(t, Config{AdminKey: func(k string) bool { return k == "sk-admin" }})
	// A wrong token in the handshake is refused before the upgrade.
	if _, resp, err := dialWS(t, srv, []string{Subprotocol, "token." + strings.Repeat("0", 64)}, nil); err == nil || resp == nil || resp.StatusCode != 401 {
		t.Fatalf("wrong token: %v %v", err, resp)
	}
	// A cross-origin page is refused even with the token.
	if _, resp, err := dialWS(t, srv, nil, http.Header{"Origin": {"http://evil.example"}}); err == nil || resp == nil || resp.StatusCode != 403 {
		t.Fatalf("cross origin: %v %v", err, resp)
	}
	// An admin key as Authorization (a script).
	c, _, err := dialWS(t, srv, []string{}, http.Header{"Authorization": {"Bearer sk-admin"}})
	if err != nil {
		t.Fatal(err)
	}
	send(t, c, `{"id":1,"method":"models.list"}`)
	if m := next(t, c); m["result"] == nil {
		t.Fatalf("admin key: %v", m)
	}
	c.CloseNow()
	// No token in the handshake: the first frame must authenticate.
	c, _, err = dialWS(t, srv, []string{Subprotocol}, nil)
	if err != nil {
		t.Fatal(err)
	}
	send(t, c, `{"id":"a","method":"auth","params":{"token":"`+testToken+`"}}`)
	if m := next(t, c); m["id"] != "a" || m["result"].(map[string]any)["ok"] != true {
		t.Fatalf("auth frame: %v", m)
	}
	send(t, c, `{"id":1,"method":"models.list"}`)
	if m := next(t, c); m["result"] == nil {
		t.Fatalf("after auth: %v", m)
	}
	c.CloseNow()
	// Any other first frame, or a wrong token in it, closes the socket with 1008.
	for _, first := range []string{`{"id":1,"method":"models.list"}`, `{"id":1,"method":"auth","params":{"token":"nope"}}`, `garbage`} {
		c, _, err = dialWS(t, srv, []string{Subprotocol}, nil)
		if err != nil {
			t.Fatal(err)
		}
		send(t, c, first)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _, err = c.Read(ctx)
		cancel()
		if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
			t.Fatalf("first frame %s: %v", first, err)
		}
		c.CloseNow()
	}
	deadline := time.Now().Add(5 * time.Second)
	for h.Sockets() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := h.Sockets(); n != 0 {
		t.Fatalf("%d sockets left open", n)
	}
}

func TestWSChatStreamAndCancel(t *testing.T) {
	f, srv, _ := startFake(t, Config{})
	c := mustDial(t, srv)
	send(t, c, `{"id":"c1","method":"chat","params":{"model":"tiny","messages":[{"role":"user","content":"hi"}]}}`)
	var text string
	for {
		m := next(t, c)
		if m["id"] != "c1" {
			t.Fatalf("frame %v", m)
		}
		if m["event"] == "piece" {
			text += m["text"].(string)
			continue
		}
		if m["event"] != "done" || m["tokens_per_second"] != 42.5 || m["cached_tokens"] != 3.0 || text != "Hello, world." {
			t.Fatalf("end %v after %q", m, text)
		}
		break
	}
	// A long reply, cancelled after its first piece: done with stopped, and the session saw it.
	f.reply = make([]string, 1000)
	for i := range f.reply {
		f.reply[i] = "y"
	}
	f.pieceEvery = 5 * time.Millisecond
	send(t, c, `{"id":"c2","method":"chat","params":{"model":"tiny","messages":[{"role":"user","content":"hi"}]}}`)
	if m := next(t, c); m["event"] != "piece" {
		t.Fatalf("first frame %v", m)
	}
	send(t, c, `{"id":"c2","method":"cancel"}`)
	for {
		m := next(t, c)
		if m["event"] == "piece" {
			continue
		}
		if m["event"] != "done" || m["stopped"] != true {
			t.Fatalf("after cancel: %v", m)
		}
		break
	}
	select {
	case <-f.stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the session's chat did not stop")
	}
	// A chat with bad params ends in an error event.
	send(t, c, `{"id":"c3","method":"chat","params":{"model":"tiny"}}`)
	if m := next(t, c); m["event"] != "error" || errCode(m) != CodeInvalidParams {
		t.Fatalf("bad chat: %v", m)
	}
}

// TestThousandIdleSockets: 1,000 idle WebSockets stay open with bounded memory, pinged, while
// the server still answers; closing them releases everything.
func TestThousandIdleSockets(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 1,000 sockets")
	}
	_, srv, h := startFake(t, Config{PingInterval: 200 * time.Millisecond})
	const n = 1000
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutines := runtime.NumGoroutine()
	conns := make([]*websocket.Conn, 0, n)
	began := time.Now()
	defer func() {
		for _, c := range conns {
			c.CloseNow()
		}
	}()
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := 0; w < 8; w++ { // eight dialers: the handshakes, not the sockets, take the time
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				c, _, err := dialWS(t, srv, nil, nil)
				if err != nil {
					errs <- err
					return
				}
				// The client must read for pings to be answered; CloseRead does that for an idle one.
				c.CloseRead(context.Background())
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("dial: %v", err)
	}
	if got := h.Sockets(); got != n {
		t.Fatalf("%d sockets open, want %d", got, n)
	}
	t.Logf("opened %d sockets in %s", n, time.Since(began).Round(time.Millisecond))
	time.Sleep(700 * time.Millisecond) // a few ping rounds
	if got := h.Sockets(); got != n {
		t.Fatalf("pings closed sockets: %d open", got)
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	perSocket := (int64(after.HeapInuse) - int64(before.HeapInuse)) / n
	// Both ends live in this process: the bound covers the client's side too.
	if perSocket > 128<<10 {
		t.Fatalf("%d bytes of heap per idle socket (client and server)", perSocket)
	}
	t.Logf("%d idle sockets: %d heap bytes and %d goroutines per socket (both ends)", n, perSocket,
		(runtime.NumGoroutine()-goroutines)/n)
	// The server still answers.
	if r := rpc(t, srv, "models.list", nil); r.Error != nil {
		t.Fatal(r.Error)
	}
	c := mustDial(t, srv)
	send(t, c, `{"id":1,"method":"models.list"}`)
	if m := next(t, c); m["result"] == nil {
		t.Fatal(m)
	}
	for _, c := range conns {
		c.CloseNow()
	}
	c.CloseNow()
	deadline := time.Now().Add(10 * time.Second)
	for h.Sockets() != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := h.Sockets(); got != 0 {
		t.Fatalf("%d sockets still counted after closing all", got)
	}
}

func TestWSSocketCap(t *testing.T) {
	_, srv, _ := startFake(t, Config{MaxSockets: 2})
	mustDial(t, srv)
	mustDial(t, srv)
	if _, resp, err := dialWS(t, srv, nil, nil); err == nil || resp == nil || resp.StatusCode != 503 {
		t.Fatalf("third socket over a cap of 2: %v %v", err, resp)
	}
}

func TestCloseEndsSockets(t *testing.T) {
	_, srv, h := startFake(t, Config{})
	c := mustDial(t, srv)
	h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("after Close: %v", err)
	}
}

// TestWSUnansweredPingsClose: a client that stops reading (so answers no ping) loses its
// socket within a ping interval and a write timeout; one that reads keeps it.
func TestWSUnansweredPingsClose(t *testing.T) {
	_, srv, h := startFake(t, Config{PingInterval: 50 * time.Millisecond, WriteTimeout: 100 * time.Millisecond})
	alive := mustDial(t, srv)
	alive.CloseRead(context.Background()) // reads (and answers pings) in the background
	deaf := mustDial(t, srv)              // never reads: its pongs never go out
	deadline := time.Now().Add(5 * time.Second)
	for h.Sockets() != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := h.Sockets(); n != 1 {
		t.Fatalf("%d sockets open, want the reading one only", n)
	}
	time.Sleep(300 * time.Millisecond)
	if n := h.Sockets(); n != 1 {
		t.Fatalf("the reading socket closed too (%d open)", n)
	}
	_ = deaf
}
