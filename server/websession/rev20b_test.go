package websession

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRev20bTokenlessSocketsCannotStarveThePage (rev20b): a local process without the token
// opens MaxSockets WebSockets and never sends an auth frame. Each holds a slot for authTimeout
// (and can be reopened forever), so the owner's page, which has the token, is refused 503
// too_many_sockets. Sockets still waiting for their auth frame must not take the slots of
// authenticated ones.
func TestRev20bTokenlessSocketsCannotStarveThePage(t *testing.T) {
	_, srv, _ := startFake(t, Config{MaxSockets: 2})
	for i := 0; i < 2; i++ {
		c, _, err := dialWS(t, srv, []string{Subprotocol}, nil) // no token, no auth frame
		if err != nil {
			t.Fatalf("tokenless socket %d: %v", i, err)
		}
		t.Cleanup(func() { c.CloseNow() })
	}
	time.Sleep(50 * time.Millisecond)
	c, resp, err := dialWS(t, srv, nil, nil) // the page: the token in the handshake
	if err != nil {
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		t.Fatalf("the page's socket was refused (%d) while 2 tokenless sockets wait: %v", code, err)
	}
	c.CloseNow()
}

// TestRev20bPageHeaders (rev20b): nothing else checks the playground page's policy headers
// (deleting them from New left every test passing): no framing by other sites, no inline
// script, no sniffing, no referrer carrying the address.
func TestRev20bPageHeaders(t *testing.T) {
	_, srv, _ := startFake(t, Config{})
	for _, p := range []string{"/", "/app.js", "/markdown.js", "/style.css"} {
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		if resp.StatusCode != 200 || !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") ||
			strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "img-src 'self' data: blob:;") || resp.Header.Get("X-Content-Type-Options") != "nosniff" ||
			resp.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: %d, CSP %q, headers %v", p, resp.StatusCode, csp, resp.Header)
		}
	}
}

// TestRev20bCloseStopsStreams (rev20b): Close ends the WebSockets' chats, but a chat streaming
// over POST /web/stream goes on: http.Server.Shutdown does not cancel a request's context, so
// webServer.Close waits its 5 s out and returns while the chat still runs on the controller
// and core the app closes next.
func TestRev20bCloseStopsStreams(t *testing.T) {
	f, srv, h := startFake(t, Config{})
	f.reply = make([]string, 2000)
	for i := range f.reply {
		f.reply[i] = "x"
	}
	f.pieceEvery = 5 * time.Millisecond
	req, _ := http.NewRequest("POST", srv.URL+"/web/stream",
		strings.NewReader(`{"method":"chat","params":{"model":"tiny","messages":[{"role":"user","content":"hi"}]}}`))
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	go io.Copy(io.Discard, resp.Body)
	time.Sleep(50 * time.Millisecond)
	h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Config.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with a stream running: %v", err)
	}
	select {
	case <-f.stopped:
	case <-time.After(time.Second):
		t.Fatal("the streamed chat went on after Close")
	}
}
