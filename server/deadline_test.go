package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/server/servertest"
)

// TestDeadlinesReachTheConnection: behind every writer the router puts in front of a handler
// (gin's, the deadlines', --nonstream-keepalive's padding), http.ResponseController still
// reaches the connection, so the streams' per-frame write deadlines are set, not silently
// dropped as http.ErrNotSupported.
func TestDeadlinesReachTheConnection(t *testing.T) {
	for _, keepalive := range []time.Duration{0, time.Hour} {
		t.Run(fmt.Sprintf("nonstream-keepalive=%s", keepalive), func(t *testing.T) {
			srv, _ := stallServer(t, Config{NonstreamKeepalive: keepalive}, func(s *httptest.Server) {
				s.Config.Handler.(*gin.Engine).POST("/v1/test/deadline", func(c *gin.Context) {
					rc := http.NewResponseController(c.Writer)
					errs := map[string]string{}
					for name, set := range map[string]func(time.Time) error{"write": rc.SetWriteDeadline, "read": rc.SetReadDeadline} {
						if err := set(time.Now().Add(time.Minute)); err != nil {
							errs[name] = err.Error()
						}
					}
					c.JSON(http.StatusOK, gin.H{"writer": fmt.Sprintf("%T", c.Writer), "errors": errs})
				})
			})
			res, body := servertest.Do(t, "POST", srv.URL+"/v1/test/deadline", `{}`)
			var got struct {
				Writer string
				Errors map[string]string
			}
			if err := json.Unmarshal(body, &got); err != nil || res.StatusCode != http.StatusOK || len(got.Errors) != 0 {
				t.Fatalf("%d %s (%v)", res.StatusCode, body, err)
			}
			if keepalive > 0 && got.Writer != "*server.paddedWriter" {
				t.Fatalf("the handler writes through %s, not the padding writer", got.Writer)
			}
		})
	}
}

// closedConns reports the server's connections as they close, by the client's address.
type closedConns struct {
	mu     sync.Mutex
	closed map[string]bool
}

func watchConns(srv *httptest.Server) *closedConns {
	w := &closedConns{closed: map[string]bool{}}
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateClosed || s == http.StateHijacked {
			w.mu.Lock()
			w.closed[c.RemoteAddr().String()] = true
			w.mu.Unlock()
		}
	}
	return w
}

// waitClosed waits until the server closes the connection whose client end is c.
func (w *closedConns) waitClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // generous: a pass never waits this long
	for {
		w.mu.Lock()
		done := w.closed[c.LocalAddr().String()]
		w.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the server still holds the connection of a client that stopped", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// upload stores a file of n bytes through POST /v1/files and returns its id.
func upload(t *testing.T, url string, n int) string {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	_ = mw.WriteField("purpose", "user_data")
	fw, _ := mw.CreateFormFile("file", "big.bin")
	_, _ = fw.Write(bytes.Repeat([]byte("0123456789abcdef"), n/16))
	_ = mw.Close()
	res, body := servertest.Do(t, "POST", url+"/v1/files", b.String(), "Content-Type", mw.FormDataContentType())
	var f struct{ ID string }
	if err := json.Unmarshal(body, &f); err != nil || res.StatusCode != http.StatusOK || f.ID == "" {
		t.Fatalf("upload: %d %s", res.StatusCode, body)
	}
	return f.ID
}

// TestStalledDownloadsAreDropped: a client that stops reading a whole reply (a file download,
// a non-streaming reply, with and without the keep-alive padding) is dropped once a write
// has waited the write timeout: the server closes its connection. Without a write deadline
// the handler's write blocks for as long as the client stays connected.
func TestStalledDownloadsAreDropped(t *testing.T) {
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	for _, keepalive := range []time.Duration{0, time.Hour} {
		var conns *closedConns
		srv, _ := stallServer(t, Config{WriteTimeout: 200 * time.Millisecond, NonstreamKeepalive: keepalive},
			func(s *httptest.Server) { conns = watchConns(s) })
		addr := srv.Listener.Addr().String()
		file := upload(t, srv.URL, 8<<20)
		cases := []struct{ name, request string }{
			{"file download", fmt.Sprintf("GET /v1/files/%s/content HTTP/1.1\r\nHost: %s\r\n\r\n", file, addr)},
			{"non-streaming chat", fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
				addr, len(`{"model":"fake",`+msgs+`}`), `{"model":"fake",`+msgs+`}`)},
			{"non-streaming ollama chat", fmt.Sprintf("POST /api/chat HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
				addr, len(`{"model":"fake","stream":false,`+msgs+`}`), `{"model":"fake","stream":false,`+msgs+`}`)},
		}
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/nonstream-keepalive=%s", tc.name, keepalive), func(t *testing.T) {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				_ = c.(*net.TCPConn).SetReadBuffer(4096)
				if _, err := io.WriteString(c, tc.request); err != nil {
					t.Fatal(err)
				}
				conns.waitClosed(t, c, tc.name) // never reading a byte of the reply
			})
		}
		// The server still answers others.
		if res, body := servertest.Do(t, "GET", srv.URL+"/v1/files/"+file, ""); res.StatusCode != http.StatusOK {
			t.Fatalf("after the stalled downloads: %d %s", res.StatusCode, body)
		}
	}
}

// TestSlowBodiesAreDropped: a client that sends half a body and then nothing gets the
// dialect's 400 once a read has waited the read timeout, and its connection is closed; a
// generation that runs longer than the read timeout after its body arrived is not cut.
func TestSlowBodiesAreDropped(t *testing.T) {
	const readTimeout = 100 * time.Millisecond
	var conns *closedConns
	srv, _ := stallServer(t, Config{ReadTimeout: readTimeout}, func(s *httptest.Server) { conns = watchConns(s) })
	addr := srv.Listener.Addr().String()
	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	_ = mw.WriteField("purpose", "user_data")
	fw, _ := mw.CreateFormFile("file", "half.bin")
	_, _ = fw.Write(bytes.Repeat([]byte("x"), 4000))
	half := func(s string) string { return s[:len(s)/2] }
	chat := `{"model":"fake","messages":[{"role":"user","content":"` + strings.Repeat("hi ", 300) + `"}]}`
	cases := []struct {
		name, path, contentType, body, shape string
	}{
		{"openai", "/v1/chat/completions", "application/json", chat, `"type":"invalid_request_error"`},
		{"anthropic", "/v1/messages", "application/json", chat, `"type":"error"`},
		{"ollama", "/api/chat", "application/json", chat, `{"error":`},
		{"file upload", "/v1/files", mw.FormDataContentType(), mp.String(), `"param":"file"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s",
				tc.path, addr, tc.contentType, len(tc.body), half(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(time.Minute)) // generous: only a failing server takes it
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("no answer to a stalled body: %v", err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), tc.shape) || !strings.Contains(string(body), "stalled") {
				t.Fatalf("%d %s", res.StatusCode, body)
			}
			conns.waitClosed(t, c, tc.name)
		})
	}

	// A whole body, then a generation several read timeouts long: the connection's read
	// deadline is lifted once the body is in (net/http watches for a hang-up meanwhile).
	srv.Config.Handler.(*gin.Engine).POST("/v1/test/slow", func(c *gin.Context) {
		b, err := io.ReadAll(c.Request.Body)
		if err != nil {
			c.String(http.StatusBadRequest, err.Error())
			return
		}
		select {
		case <-time.After(5 * readTimeout):
			c.String(http.StatusOK, "%d bytes, then the work", len(b))
		case <-c.Request.Context().Done():
			c.String(http.StatusInternalServerError, "the request was cancelled: %v", ctxErr(c))
		}
	})
	res, body := servertest.Do(t, "POST", srv.URL+"/v1/test/slow", chat)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("a long request after its body: %d %s", res.StatusCode, body)
	}
}

func ctxErr(c *gin.Context) error { return c.Request.Context().Err() }

// TestTrickledBodiesAreDropped: a client that sends a byte just before each read timeout
// (a slowloris) gets the dialect's 400 once the body falls behind MinBodyRate, instead of
// holding its connection for as long as the body's length allows.
func TestTrickledBodiesAreDropped(t *testing.T) {
	const readTimeout = 200 * time.Millisecond
	var conns *closedConns
	srv, _ := stallServer(t, Config{ReadTimeout: readTimeout}, func(s *httptest.Server) { conns = watchConns(s) })
	addr := srv.Listener.Addr().String()
	body := `{"model":"fake","messages":[{"role":"user","content":"` + strings.Repeat("hi ", 2000) + `"}]}`
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", addr, len(body)); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() { // a byte every quarter of the read timeout: each read gets something in time
		for i := range len(body) {
			select {
			case <-stop:
				return
			case <-time.After(readTimeout / 4):
			}
			if _, err := c.Write([]byte{body[i]}); err != nil {
				return
			}
		}
	}()
	// The whole body would take len(body) × 50 ms (over 5 minutes); the server must answer
	// long before.
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a trickled body: %v", err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"type":"invalid_request_error"`) || !strings.Contains(string(b), "bytes per second") {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
	conns.waitClosed(t, c, "a trickled body")

	// A body that arrives steadily above the rate is taken, though it takes several read
	// timeouts: 48 KB at about 10 KB/s against a 1 s timeout (pauses of a tenth of it, so a
	// loaded machine's late wake-ups do not stall it).
	srv, _ = stallServer(t, Config{ReadTimeout: time.Second})
	long := `{"model":"fake","max_tokens":1,"messages":[{"role":"user","content":"` + strings.Repeat("hi ", 16000) + `"}]}`
	pr, pw := io.Pipe()
	go func() {
		for rest := long; rest != ""; {
			n := min(1024, len(rest))
			if _, err := pw.Write([]byte(rest[:n])); err != nil {
				return
			}
			rest = rest[n:]
			time.Sleep(100 * time.Millisecond)
		}
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", pr)
	req.Header.Set("Content-Type", "application/json")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("a steady body of %d bytes (chunked): %d %s", len(long), res.StatusCode, b)
	}
}
