package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/forward"
	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/store"
)

// usageUpstream is a fake OpenAI-compatible server for "served": /v1/rerank and /v1/score
// answer JSON with a usage object, /v1/tokenize JSON without one, /v1/audio/stream an event
// stream whose last event has usage; every path it got is kept.
type usageUpstream struct {
	*httptest.Server
	mu    sync.Mutex
	paths []string
	model []string // the model field of each body
}

func newUsageUpstream(t *testing.T) *usageUpstream {
	u := &usageUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var v struct{ Model string }
		_ = json.Unmarshal(body, &v)
		if r.Method == http.MethodPost {
			u.mu.Lock()
			u.paths, u.model = append(u.paths, r.URL.Path), append(u.model, v.Model)
			u.mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/models":
			fmt.Fprint(w, `{"object":"list","data":[{"id":"served","max_model_len":4096}]}`)
		case "/v1/rerank":
			fmt.Fprint(w, `{"model":"served","results":[{"index":0,"relevance_score":0.9}],"usage":{"prompt_tokens":11,"total_tokens":11}}`)
		case "/v1/score":
			fmt.Fprint(w, `{"data":[{"score":0.5}],"usage":{"prompt_tokens":7,"completion_tokens":0,"prompt_tokens_details":{"cached_tokens":3}}}`)
		case "/v1/tokenize":
			fmt.Fprint(w, `{"tokens":[1,2,3],"upstream":true}`)
		case "/v1/audio/stream":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n")
			w.(http.Flusher).Flush()
			fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(u.Close)
	return u
}

// teamRouter is a router in team mode over two lanes, both serving: "up" forwarding the model
// "qwen" to upstream (as "served"), and "main", local, serving "alpha" ("gamma" is registered
// and unserved); its core records requests in st.
func teamRouter(t *testing.T, upstreamURL string, st *store.Store) (*httptest.Server, *core.Service, *lanes.Manager) {
	ctx := context.Background()
	echo := &servertest.Echo{}
	svc := core.New(core.Config{}, st, servertest.EchoModel("alpha", echo), servertest.EchoModel("gamma", echo))
	devices := []lanes.Device{{Name: "cpu"}}
	mgr := lanes.NewManager(lanes.Config{Store: st, Devices: devices, Catalog: svc,
		Factory: func(ctx context.Context, spec lanes.Spec) (*core.Model, func(), error) {
			if spec.Lane.Engine == string(lanes.OpenAI) {
				m, err := forward.NewModel(ctx, spec.Lane.Model, forward.Config{URL: spec.Lane.Config.URL,
					Model: spec.Lane.Config.ServedModel, MustAnswer: true})
				return m, func() {}, err
			}
			return servertest.EchoModel(spec.Lane.Model, echo), func() {}, nil
		}})
	svc.SetRouter(lanes.NewRouter(mgr, nil, svc))
	t.Cleanup(func() { mgr.Close(ctx) })
	for _, n := range []lanes.NewLane{
		{Name: "up", Device: "cpu", Engine: lanes.OpenAI, Model: "qwen", Config: store.LaneConfig{URL: upstreamURL + "/v1", ServedModel: "served"}},
		{Name: "main", Device: "cpu", Engine: lanes.Local, Model: "alpha"},
	} {
		if _, err := mgr.Add(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range mgr.Lanes() {
		select {
		case <-l.Settled():
		case <-time.After(5 * time.Second):
			t.Fatalf("lane %s did not settle", l.Name())
		}
		if st := l.Status(); st.State != lanes.Serving {
			t.Fatalf("lane %+v", st)
		}
	}
	srv := httptest.NewServer(server.New(server.Config{Lanes: mgr, Devices: devices}, svc))
	t.Cleanup(srv.Close)
	return srv, svc, mgr
}

// TestForwardedRequestsRecorded: a request forwarded as is (another /v1 route, and rerank on a
// forwarded lane) is recorded with its lane, engine, status and duration, and the tokens of
// the upstream's usage object (a JSON body's, or an event stream's last); a refusal is
// recorded with its status.
func TestForwardedRequestsRecorded(t *testing.T) {
	up := newUsageUpstream(t)
	st := servertest.Store(t)
	srv, _, _ := teamRouter(t, up.URL, st)
	for _, c := range []struct{ path, body string }{
		{"/v1/score", `{"model": "qwen", "text_1": "a", "text_2": "b"}`},
		{"/v1/rerank", `{"model": "qwen", "query": "q", "documents": ["a"]}`},
		{"/v1/audio/stream", `{"model": "qwen", "stream": true}`},
		{"/v1/score", `{"model": "gamma"}`}, // registered, no lane serves it: 409
	} {
		resp, body := servertest.Do(t, "POST", srv.URL+c.path, c.body, "Content-Type", "application/json")
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusConflict {
			t.Fatalf("%s: %d %s", c.path, resp.StatusCode, body)
		}
	}
	if err := st.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs, err := st.RecentRequests(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	type rec struct {
		endpoint, model, lane, engine string
		status, prompt, completion    int
		cached                        int
		stream                        bool
	}
	var got []rec
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		if r.Total <= 0 || !strings.HasPrefix(r.ID, "fwd-") {
			t.Errorf("record %+v: want an fwd- id and a duration", r)
		}
		got = append(got, rec{r.Endpoint, r.Model, r.LaneName, r.Engine, r.Status, r.PromptTokens, r.CompletionTokens, r.CachedTokens, r.Stream})
	}
	want := []rec{
		{"/v1/score", "qwen", "up", "openai", 200, 7, 0, 3, false},
		{"/v1/rerank", "qwen", "up", "openai", 200, 11, 0, 0, false},
		{"/v1/audio/stream", "qwen", "up", "openai", 200, 4, 2, 0, true},
		{"/v1/score", "gamma", "", "", 409, 0, 0, 0, false},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("records:\ngot  %v\nwant %v", got, want)
	}
}

// TestRerankTokenizeForwarded: in team mode /v1/rerank and /v1/tokenize for a model on a
// forwarded lane reach its server (with the served name) and its reply comes back as is; for
// a local lane's model the built-in handlers answer, and nothing reaches the upstream.
func TestRerankTokenizeForwarded(t *testing.T) {
	up := newUsageUpstream(t)
	srv, _, _ := teamRouter(t, up.URL, servertest.Store(t))
	resp, body := servertest.Do(t, "POST", srv.URL+"/v1/tokenize", `{"model": "qwen", "content": "hi"}`, "Content-Type", "application/json")
	if resp.StatusCode != http.StatusOK || string(body) != `{"tokens":[1,2,3],"upstream":true}` {
		t.Fatalf("tokenize on the forwarded lane: %d %s", resp.StatusCode, body)
	}
	resp, body = servertest.Do(t, "POST", srv.URL+"/v1/rerank", `{"model": "qwen", "query": "q", "documents": ["a"]}`, "Content-Type", "application/json")
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"relevance_score":0.9`) {
		t.Fatalf("rerank on the forwarded lane: %d %s", resp.StatusCode, body)
	}
	up.mu.Lock()
	paths, models := fmt.Sprint(up.paths), fmt.Sprint(up.model)
	up.mu.Unlock()
	if paths != "[/v1/tokenize /v1/rerank]" || models != "[served served]" {
		t.Fatalf("the upstream got %s with models %s", paths, models)
	}
	resp, body = servertest.Do(t, "POST", srv.URL+"/v1/tokenize", `{"model": "alpha", "content": "hi"}`, "Content-Type", "application/json")
	if resp.StatusCode != http.StatusOK || strings.Contains(string(body), "upstream") {
		t.Fatalf("tokenize on the local lane: %d %s", resp.StatusCode, body)
	}
	up.mu.Lock()
	n := len(up.paths)
	up.mu.Unlock()
	if n != 2 {
		t.Fatalf("a local lane's tokenize reached the upstream (%d requests)", n)
	}
}
