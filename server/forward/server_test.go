package forward_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/forward"
)

// lateServer is a test server whose handler is set after its URL is known; until then it
// answers 503.
func lateServer(t *testing.T) (*httptest.Server, *atomic.Pointer[http.Handler]) {
	var h atomic.Pointer[http.Handler]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := h.Load(); p != nil {
			(*p).ServeHTTP(w, r)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	return srv, &h
}

// serve is a superfluid router with instance id serving models.
func serve(id string, models ...*core.Model) http.Handler {
	return server.New(server.Config{InstanceID: id}, core.New(core.Config{}, nil, models...))
}

func post(t *testing.T, url, body string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestForwardingLoop: A forwards its model to B, B forwards it back to A: the request comes
// back to A with A in its Via chain and is refused with 508 forwarding_loop, which both
// forwarders pass on; streamed or not, the client gets the 508 before any byte. An engine
// pointed at its own server is refused when it is made.
func TestForwardingLoop(t *testing.T) {
	ctx := context.Background()
	srvA, handlerA := lateServer(t)
	srvB, handlerB := lateServer(t)
	toB, err := forward.NewModel(ctx, "m", forward.Config{URL: srvB.URL, Model: "m", Instance: "sf-A"})
	if err != nil {
		t.Fatal(err)
	}
	toA, err := forward.NewModel(ctx, "m", forward.Config{URL: srvA.URL, Model: "m", Instance: "sf-B"})
	if err != nil {
		t.Fatal(err)
	}
	a, b := serve("sf-A", toB), serve("sf-B", toA)
	handlerA.Store(&a)
	handlerB.Store(&b)

	for _, stream := range []bool{false, true} {
		resp, body := post(t, srvA.URL, fmt.Sprintf(`{"model":"m","stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream))
		if resp.StatusCode != http.StatusLoopDetected || !strings.Contains(body, `"code":"forwarding_loop"`) {
			t.Errorf("stream %v: %d %s, want 508 forwarding_loop", stream, resp.StatusCode, body)
		}
		if !strings.Contains(body, "sf-A, sf-B") {
			t.Errorf("the refusal does not name the chain: %s", body)
		}
		if got := resp.Header.Get(forward.InstanceHeader); got != "sf-A" {
			t.Errorf("instance header %q", got)
		}
	}
	if _, err := forward.New(ctx, forward.Config{URL: srvA.URL + "/v1", Model: "m", Instance: "sf-A"}); !errors.Is(err, forward.ErrSelf) {
		t.Errorf("an engine pointed at its own server: %v", err)
	}
}

// TestUpstreamErrorsThroughTheServer: a forwarded model whose upstream fails before the reply
// gives the client 502 upstream_error; one that fails mid-stream ends the stream with the
// dialect's in-stream error after the relayed text; a client that hangs up cancels the
// upstream request.
func TestUpstreamErrorsThroughTheServer(t *testing.T) {
	hungUp := make(chan struct{}, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method == http.MethodGet {
			w.WriteHeader(404)
			return
		}
		switch {
		case bytes.Contains(body, []byte("fail-now")):
			http.Error(w, "boom", 500)
		case bytes.Contains(body, []byte("fail-later")):
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"partial\"}}]}\n\ndata: {oops\n\n")
		case bytes.Contains(body, []byte("hang-up")):
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"first\"}}]}\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				hungUp <- struct{}{}
			case <-time.After(10 * time.Second):
			}
		}
	}))
	t.Cleanup(up.Close)
	m, err := forward.NewModel(context.Background(), "fwd", forward.Config{URL: up.URL, Model: "served"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(serve("sf-front", m))
	t.Cleanup(srv.Close)

	for _, stream := range []bool{false, true} {
		resp, body := post(t, srv.URL, fmt.Sprintf(`{"model":"fwd","stream":%v,"messages":[{"role":"user","content":"fail-now"}]}`, stream))
		if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, `"code":"upstream_error"`) {
			t.Errorf("stream %v: %d %s, want 502 upstream_error", stream, resp.StatusCode, body)
		}
	}
	resp, body := post(t, srv.URL, `{"model":"fwd","stream":true,"messages":[{"role":"user","content":"fail-later"}]}`)
	if resp.StatusCode != 200 || !strings.Contains(body, "partial") || !strings.Contains(body, `"error"`) || !strings.Contains(body, "malformed chunk") {
		t.Errorf("a fault mid-stream: %d %s", resp.StatusCode, body)
	}

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"fwd","stream":true,"messages":[{"role":"user","content":"hang-up"}]}`))
	req.Header.Set("Content-Type", "application/json")
	hresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(hresp.Body).ReadString('\n')
	if !strings.Contains(line, "first") {
		t.Errorf("first line %q", line)
	}
	cancel()
	hresp.Body.Close()
	select {
	case <-hungUp:
	case <-time.After(5 * time.Second):
		t.Error("the upstream request outlived the client")
	}
}

// TestProxy: any other route is relayed as is — method, path, query, headers (the client's key
// replaced by the upstream's), the body with the served model's name — and its reply status,
// headers and SSE events, each flushed as it comes; a client that hangs up cancels upstream.
func TestProxy(t *testing.T) {
	release, hungUp := make(chan struct{}), make(chan struct{}, 1)
	var got struct {
		path, query, auth, custom, via string
		body                           map[string]any
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.WriteHeader(404)
			return
		}
		got.path, got.query, got.auth, got.custom, got.via = r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), r.Header.Get("X-Custom"), r.Header.Get(forward.ViaHeader)
		_ = json.NewDecoder(r.Body).Decode(&got.body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Upstream", "yes")
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprint(w, "event: one\ndata: {\"n\":1}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			hungUp <- struct{}{}
			return
		}
		fmt.Fprint(w, "data: {\"n\":2}\n\n")
	}))
	t.Cleanup(up.Close)
	e, err := forward.New(context.Background(), forward.Config{URL: up.URL, Key: "up-key", Model: "served", Instance: "sf-front"})
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := forward.Proxy(w, r, e); err != nil {
			http.Error(w, err.Error(), 502)
		}
	}))
	t.Cleanup(front.Close)

	for _, hangUp := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, front.URL+"/v1/rerank?x=1", strings.NewReader(`{"model":"alias","query":"q","top_n":2}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer client-key")
		req.Header.Set("X-Custom", "kept")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(resp.Body)
		first, _ := r.ReadString('\n')
		if resp.StatusCode != http.StatusAccepted || resp.Header.Get("X-Upstream") != "yes" || first != "event: one\n" {
			t.Errorf("status %d, header %q, first line %q", resp.StatusCode, resp.Header.Get("X-Upstream"), first)
		}
		if got.path != "/v1/rerank" || got.query != "x=1" || got.auth != "Bearer up-key" || got.custom != "kept" || got.via != "sf-front" ||
			got.body["model"] != "served" || got.body["top_n"] != 2.0 {
			t.Errorf("upstream got %+v", got)
		}
		if hangUp {
			cancel()
			resp.Body.Close()
			select {
			case <-hungUp:
			case <-time.After(5 * time.Second):
				t.Error("the upstream request outlived the client")
			}
			continue
		}
		release <- struct{}{}
		rest, _ := io.ReadAll(r)
		if !strings.Contains(string(rest), `data: {"n":2}`) {
			t.Errorf("rest %q", rest)
		}
		resp.Body.Close()
		cancel()
	}

	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	e2, _ := forward.New(context.Background(), forward.Config{URL: down.URL, Model: "m"})
	rec := httptest.NewRecorder()
	err = forward.Proxy(rec, httptest.NewRequest(http.MethodPost, "/v1/x", strings.NewReader("{}")), e2)
	if se := (*llmStatus)(nil); !errors.As(err, &se) || se.Status != 502 || se.Code != "upstream_error" {
		t.Errorf("an upstream down: %v", err)
	}
}

type llmStatus = llm.StatusError
