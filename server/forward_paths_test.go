package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
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

// TestForwardOtherRoutesStayUnderV1: a path with dot segments (or an empty one) is not
// forwarded (a trailing slash is): it would reach the upstream outside its /v1 (an admin route of vLLM or SGLang,
// /metrics) or, through a proxy that cleans paths, one of the routes the gateway serves and
// accounts itself (/v1/./chat/completions), with the upstream's key. Nor is a path under this
// server's own API (/v1/admin, keys, usage, files, batches, models, responses, metrics, lora): a
// typo'd admin call must not reach an upstream with the lane's key.
func TestForwardOtherRoutesStayUnderV1(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var paths []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"served","max_model_len":4096}]}`)
			return
		}
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		fmt.Fprint(w, `{}`)
	}))
	t.Cleanup(up.Close)
	st := servertest.Store(t)
	svc := core.New(core.Config{}, nil)
	devices := []lanes.Device{{Name: "cpu"}}
	mgr := lanes.NewManager(lanes.Config{Store: st, Devices: devices, Catalog: svc,
		Factory: func(ctx context.Context, spec lanes.Spec) (*core.Model, func(), error) {
			m, err := forward.NewModel(ctx, spec.Lane.Model, forward.Config{URL: spec.Lane.Config.URL,
				Model: spec.Lane.Config.ServedModel, MustAnswer: true})
			return m, func() {}, err
		}})
	svc.SetRouter(lanes.NewRouter(mgr, nil, svc))
	t.Cleanup(func() { mgr.Close(ctx) })
	if _, err := mgr.Add(ctx, lanes.NewLane{Name: "up", Device: "cpu", Engine: lanes.OpenAI, Model: "qwen",
		Config: store.LaneConfig{URL: up.URL + "/v1", ServedModel: "served"}}); err != nil {
		t.Fatal(err)
	}
	l := laneNamed(t, mgr, "up")
	select {
	case <-l.Settled():
	case <-time.After(5 * time.Second):
		t.Fatal("lane up did not settle")
	}
	srv := httptest.NewServer(server.New(server.Config{Lanes: mgr, Devices: devices}, svc))
	t.Cleanup(srv.Close)
	for _, p := range []string{"/v1/../metrics", "/v1/score/../../sleep", "/v1/./chat/completions", "/v1/%2e%2e/flush_cache", "/v1//x",
		// this server's own API: never an upstream's, whatever method or sub-path it lacks
		"/v1/admin/lanes/up/restart", "/v1/admin/x", "/v1/keys/k1/rotate", "/v1/usage", "/v1/files/f1/x", "/v1/batches/b1/retry",
		"/v1/models/qwen/x", "/v1/responses/r1/x", "/v1/metrics", "/v1/lora/activate", "/v1/lora/load/x",

		"/v1/load_lora_adapter", "/v1/unload_lora_adapter/"} { // vLLM's: the server changed for everyone
		resp, body := servertest.Do(t, "POST", srv.URL+p, `{"model": "qwen"}`, "Content-Type", "application/json")
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST %s: %d %s, want 404 (or 405)", p, resp.StatusCode, body)
		}
	}
	if resp, body := servertest.Do(t, "POST", srv.URL+"/v1/score/", `{"model": "qwen"}`, "Content-Type", "application/json"); resp.StatusCode != http.StatusOK {
		t.Errorf("POST /v1/score/: %d %s, want it forwarded", resp.StatusCode, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) != 1 || paths[0] != "/v1/score/" {
		t.Fatalf("the upstream was sent %q, want only /v1/score/", paths)
	}
}
