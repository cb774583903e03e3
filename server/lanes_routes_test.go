package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/servertest"
)

// laneBookings is an in-memory lanes.Reservations.
type laneBookings []lanes.Reservation

func (b *laneBookings) Active(time.Time) []lanes.Reservation { return *b }

// TestLaneRoutes: the admin API adds, lists, switches and removes lanes (admin only; bad input
// refused with its code; the upstream key never shown), and chat requests are routed by the
// model field with the spec's errors in OpenAI's shape.
func TestLaneRoutes(t *testing.T) {
	ctx := context.Background()
	st := servertest.Store(t)
	admin, err := auth.APIKey("sk-sf-lanes-admin")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := auth.New(ctx, auth.Config{Keys: []auth.Key{admin}, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	alice, aliceInfo, err := keys.Create(ctx, auth.NewKey{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	echo := &servertest.Echo{}
	svc := core.New(core.Config{}, nil, servertest.EchoModel("alpha", echo), servertest.EchoModel("beta", echo), servertest.EchoModel("gamma", echo))
	devices := []lanes.Device{{Name: "cpu"}}
	mgr := lanes.NewManager(lanes.Config{Store: st, Devices: devices, Catalog: svc,
		Factory: func(_ context.Context, spec lanes.Spec) (*core.Model, func(), error) {
			return servertest.EchoModel(spec.Lane.Model, echo), func() {}, nil
		}})
	booked := &laneBookings{}
	svc.SetRouter(lanes.NewRouter(mgr, booked, svc))
	srv := httptest.NewServer(server.New(server.Config{Keys: keys, Lanes: mgr, Devices: devices}, svc))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { mgr.Close(ctx) })

	do := func(key, method, path, body string) (int, map[string]any, string) {
		t.Helper()
		resp, b := servertest.Do(t, method, srv.URL+path, body, "Authorization", "Bearer "+key)
		var v map[string]any
		_ = json.Unmarshal(b, &v)
		return resp.StatusCode, v, string(b)
	}
	errCode := func(v map[string]any) any {
		e, _ := v["error"].(map[string]any)
		return e["code"]
	}
	const adminKey = "sk-sf-lanes-admin"

	if code, v, _ := do(alice, "POST", "/v1/admin/lanes", `{"name": "main", "device": "cpu", "engine": "local", "model": "alpha"}`); code != 403 || errCode(v) != "admin_required" {
		t.Fatalf("member adds a lane: %d %v", code, v)
	}
	code, v, body := do(adminKey, "POST", "/v1/admin/lanes", `{"name": "main", "device": "cpu", "engine": "local", "model": "alpha"}`)
	if code != 201 || v["object"] != "lane" || v["model"] != "alpha" || v["device"] != "cpu" {
		t.Fatalf("add: %d %s", code, body)
	}
	for _, tc := range []struct{ body, code string }{
		{`{"name": "main", "device": "cpu", "engine": "local", "model": "beta"}`, "lane_exists"},
		{`{"name": "x", "device": "cuda:3", "engine": "local", "model": "beta"}`, "unknown_device"},
		{`{"name": "x", "device": "cpu", "engine": "tgi", "model": "beta"}`, "unknown_engine"},
		{`{"name": "x", "device": "cpu", "engine": "local", "model": "nope"}`, "model_not_found"},
	} {
		if code, v, _ := do(adminKey, "POST", "/v1/admin/lanes", tc.body); code/100 != 4 || errCode(v) != tc.code {
			t.Fatalf("%s: %d %v, want %s", tc.body, code, v, tc.code)
		}
	}
	code, v, body = do(adminKey, "POST", "/v1/admin/lanes", `{"name": "up", "engine": "openai", "model": "qwen", "url": "http://192.0.2.7:8000/v1", "upstream_key": "sk-up-secret"}`)
	if code != 201 || v["has_key"] != true || strings.Contains(body, "sk-up-secret") {
		t.Fatalf("openai lane: %d %s", code, body)
	}
	// A password in the URL (basic auth in front of the model server) is as write-only as the key.
	code, _, body = do(adminKey, "POST", "/v1/admin/lanes", `{"name": "basic", "engine": "openai", "model": "qwen", "url": "http://me:hunter2@192.0.2.8:8000/v1"}`)
	if code != 201 || strings.Contains(body, "hunter2") || !strings.Contains(body, "me:xxxxx@192.0.2.8") {
		t.Fatalf("openai lane with a password in its URL: %d %s", code, body)
	}
	code, v, body = do(adminKey, "GET", "/v1/admin/lanes", "")
	if data, _ := v["data"].([]any); code != 200 || len(data) != 3 || strings.Contains(body, "sk-up-secret") || strings.Contains(body, "hunter2") {
		t.Fatalf("list: %d %s", code, body)
	}
	for _, name := range []string{"up", "basic"} {
		if err := mgr.Remove(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for mgr.Lanes()[0].Status().State != lanes.Serving {
		if time.Now().After(deadline) {
			t.Fatal("lane main did not serve")
		}
		time.Sleep(5 * time.Millisecond)
	}

	chat := func(key, model string) (int, map[string]any) {
		code, v, _ := do(key, "POST", "/v1/chat/completions", `{"model": "`+model+`", "messages": [{"role": "user", "content": "hi"}]}`)
		return code, v
	}
	if code, v := chat(alice, "alpha"); code != 200 || v["model"] != "alpha" {
		t.Fatalf("alice alpha: %d %v", code, v)
	}
	if code, v := chat(alice, "whatever-model"); code != 200 || v["model"] != "alpha" {
		t.Fatalf("alice unknown name goes to the free lane: %d %v", code, v)
	}
	if code, v := chat(alice, "gamma"); code != 409 || errCode(v) != "model_not_loaded" {
		t.Fatalf("alice gamma: %d %v", code, v)
	}
	if code, v, _ := do(alice, "GET", "/v1/models", ""); code != 200 || len(v["data"].([]any)) != 1 {
		t.Fatalf("alice's models: %d %v", code, v)
	}
	*booked = laneBookings{{Lane: "main", PersonID: "key-bob", End: time.Now().Add(time.Hour)}}
	if code, v := chat(alice, "alpha"); code != 403 || errCode(v) != "gpu_reserved" {
		t.Fatalf("alice on bob's lane: %d %v", code, v)
	}
	if code, v, _ := do(alice, "GET", "/v1/models", ""); code != 200 || len(v["data"].([]any)) != 0 {
		t.Fatalf("alice's models during bob's booking: %d %v", code, v)
	}
	*booked = laneBookings{{Device: "cpu", Whole: true, PersonID: aliceInfo.ID, End: time.Now().Add(time.Hour)}}
	if code, v := chat(alice, "alpha"); code != 503 || errCode(v) != "gpu_exclusive" {
		t.Fatalf("alice during her whole-GPU booking: %d %v", code, v)
	}
	*booked = nil

	if code, v, _ := do(adminKey, "PATCH", "/v1/admin/lanes/main", `{"model": "nope"}`); code != 400 || errCode(v) != "model_not_found" {
		t.Fatalf("switch to a missing model: %d %v", code, v)
	}
	if code, v, _ := do(adminKey, "PATCH", "/v1/admin/lanes/nope", `{"model": "beta"}`); code != 404 || errCode(v) != "lane_not_found" {
		t.Fatalf("switch a missing lane: %d %v", code, v)
	}
	if code, v, body := do(adminKey, "PATCH", "/v1/admin/lanes/main", `{"model": "beta"}`); code != 200 || v["model"] != "beta" {
		t.Fatalf("switch: %d %s", code, body)
	}
	<-mgr.Lanes()[0].Settled()
	if code, v := chat(alice, "beta"); code != 200 || v["model"] != "beta" {
		t.Fatalf("after the switch: %d %v", code, v)
	}
	if code, _, body := do(adminKey, "DELETE", "/v1/admin/lanes/main", ""); code != 200 || !strings.Contains(body, `"deleted":true`) {
		t.Fatalf("delete: %d %s", code, body)
	}
	if code, v, _ := do(adminKey, "DELETE", "/v1/admin/lanes/main", ""); code != 404 || errCode(v) != "lane_not_found" {
		t.Fatalf("delete twice: %d %v", code, v)
	}
	if code, v := chat(alice, "beta"); code != http.StatusConflict || errCode(v) != "model_not_loaded" {
		t.Fatalf("with no lane: %d %v", code, v)
	}
}
