package server_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestLaneTimeouts: an openai lane's header and idle timeouts (seconds) are set through the admin
// API, shown with the lane and handed to its engine factory; a negative one, or one on a local
// lane (which forwards nothing), is a 400.
func TestLaneTimeouts(t *testing.T) {
	ctx := context.Background()
	echo := &servertest.Echo{}
	svc := core.New(core.Config{}, nil, servertest.EchoModel("alpha", echo))
	var mu sync.Mutex
	var built [2]int
	devices := []lanes.Device{{Name: "cpu"}}
	mgr := lanes.NewManager(lanes.Config{Store: servertest.Store(t), Devices: devices, Catalog: svc,
		Factory: func(_ context.Context, spec lanes.Spec) (*core.Model, func(), error) {
			mu.Lock()
			built = [2]int{spec.Lane.Config.HeaderTimeout, spec.Lane.Config.IdleTimeout}
			mu.Unlock()
			return servertest.EchoModel(spec.Lane.Model, echo), func() {}, nil
		}})
	t.Cleanup(func() { mgr.Close(ctx) })
	srv := httptest.NewServer(server.New(server.Config{Lanes: mgr, Devices: devices}, svc))
	t.Cleanup(srv.Close)
	resp, body := servertest.Do(t, "POST", srv.URL+"/v1/admin/lanes",
		`{"name": "up", "engine": "openai", "model": "qwen", "url": "http://10.0.0.5:8000/v1", "header_timeout": 900, "idle_timeout": 120}`)
	var lane map[string]any
	_ = json.Unmarshal(body, &lane)
	if resp.StatusCode != 201 || lane["header_timeout"] != 900.0 || lane["idle_timeout"] != 120.0 {
		t.Fatalf("add with timeouts: %d %s", resp.StatusCode, body)
	}
	<-mgr.Lanes()[0].Settled()
	mu.Lock()
	got := built
	mu.Unlock()
	if got != [2]int{900, 120} {
		t.Fatalf("the factory got timeouts %v", got)
	}
	for _, bad := range []string{
		`{"name": "neg", "engine": "openai", "model": "q", "url": "http://10.0.0.5:8000/v1", "idle_timeout": -1}`,
		`{"name": "loc", "device": "cpu", "engine": "local", "model": "alpha", "header_timeout": 60}`,
	} {
		if resp, body := servertest.Do(t, "POST", srv.URL+"/v1/admin/lanes", bad); resp.StatusCode != 400 {
			t.Errorf("%s: %d %s, want 400", bad, resp.StatusCode, body)
		}
	}
}
