package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/servertest"
)

// otherUpstream is a fake vLLM: it serves "served", answers /v1/score with what it got, and
// on /v1/slow sends one chunk then waits for the client to go.
type otherUpstream struct {
	*httptest.Server
	mu        sync.Mutex
	got       map[string]any // the last /v1/score body
	slowStart chan struct{}
	cancelled chan struct{}
}

func newOtherUpstream(t *testing.T) *otherUpstream {
	u := &otherUpstream{slowStart: make(chan struct{}, 1), cancelled: make(chan struct{}, 1)}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
			fmt.Fprint(w, `{"object":"list","data":[{"id":"served","max_model_len":4096}]}`)
		case r.URL.Path == "/v1/score":
			var v map[string]any
			_ = json.Unmarshal(body, &v)
			u.mu.Lock()
			u.got = v
			u.mu.Unlock()
			w.Header().Set("X-Upstream", "vllm")
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprint(w, `{"results": [{"index": 0, "relevance_score": 0.5}], "odd": true}`)
		case r.URL.Path == "/v1/slow":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: one\n\n")
			w.(http.Flusher).Flush()
			u.slowStart <- struct{}{}
			select {
			case <-r.Context().Done():
				u.cancelled <- struct{}{}
			case <-time.After(10 * time.Second):
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(u.Close)
	return u
}

// TestForwardOtherRoutes: in team mode a POST to a /v1 route no handler serves is routed by
// its body's model like chat: on an openai lane it reaches the upstream with the served
// model's name and the reply comes back as is; it counts as running on the lane and a client
// that hangs up cancels it upstream; a local lane's model gets the usual 404, a registered model
// no lane serves 409 model_not_loaded in OpenAI's shape. Without lanes the route stays a 404.
func TestForwardOtherRoutes(t *testing.T) {
	ctx := context.Background()
	up := newOtherUpstream(t)
	srv, svc, mgr := teamRouter(t, up.URL, servertest.Store(t))

	resp, body := servertest.Do(t, "POST", srv.URL+"/v1/score?top=1", `{"model": "qwen", "query": "q", "documents": ["a"]}`,
		"Content-Type", "application/json")
	if resp.StatusCode != http.StatusAccepted || resp.Header.Get("X-Upstream") != "vllm" ||
		string(body) != `{"results": [{"index": 0, "relevance_score": 0.5}], "odd": true}` {
		t.Fatalf("score: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	up.mu.Lock()
	got := up.got
	up.mu.Unlock()
	if got["model"] != "served" || got["query"] != "q" {
		t.Fatalf("the upstream got %v, want the served model's name and the rest as sent", got)
	}

	for _, tc := range []struct {
		path, body string
		status     int
		code       any
	}{
		{"/v1/classify", `{"model": "alpha", "prompt": "x"}`, http.StatusNotFound, nil},
		{"/v1/score", `{"model": "gamma", "query": "q"}`, http.StatusConflict, "model_not_loaded"},
	} {
		resp, body := servertest.Do(t, "POST", srv.URL+tc.path, tc.body, "Content-Type", "application/json")
		var v struct {
			Error struct {
				Message, Type string
				Code          any
			}
		}
		_ = json.Unmarshal(body, &v)
		if resp.StatusCode != tc.status || v.Error.Code != tc.code || v.Error.Message == "" || v.Error.Type == "" {
			t.Fatalf("%s %s: %d %s", tc.path, tc.body, resp.StatusCode, body)
		}
	}

	// A stream the client hangs up on: running on the lane meanwhile, cancelled upstream after.
	cctx, cancel := context.WithCancel(ctx)
	req, _ := http.NewRequestWithContext(cctx, "POST", srv.URL+"/v1/slow", bytes.NewReader([]byte(`{"model": "qwen"}`)))
	req.Header.Set("Content-Type", "application/json")
	sresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, len("data: one\n\n"))
	if _, err := io.ReadFull(sresp.Body, first); err != nil || string(first) != "data: one\n\n" {
		t.Fatalf("first chunk %q, %v", first, err)
	}
	<-up.slowStart
	if n := laneNamed(t, mgr, "up").Status().Inflight; n != 1 {
		t.Fatalf("the lane counts %d running, want 1", n)
	}
	cancel()
	sresp.Body.Close()
	select {
	case <-up.cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the hang-up did not cancel the upstream request")
	}
	deadline := time.Now().Add(5 * time.Second)
	for laneNamed(t, mgr, "up").Status().Inflight != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the request still counts on the lane")
		}
		time.Sleep(10 * time.Millisecond)
	}

	single := httptest.NewServer(server.New(server.Config{}, svc))
	t.Cleanup(single.Close)
	if resp, body := servertest.Do(t, "POST", single.URL+"/v1/score", `{"model": "qwen"}`, "Content-Type", "application/json"); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("single-user mode forwards: %d %s", resp.StatusCode, body)
	}
}

func laneNamed(t *testing.T, m *lanes.Manager, name string) *lanes.Lane {
	for _, l := range m.Lanes() {
		if l.Name() == name {
			return l
		}
	}
	t.Fatalf("no lane %s", name)
	return nil
}
