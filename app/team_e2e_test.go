package app

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestTeamLanesE2E: serve --team over the real worker: a local lane added through the admin
// API loads its catalog model and serves the names routed to it (its model, an unknown name);
// a lane whose engine cannot start answers 503 model_unavailable with Retry-After; removing the
// lane leaves its model registered but unserved (409 model_not_loaded).
func TestTeamLanesE2E(t *testing.T) {
	cfg := testConfig(t, testModel)
	cfg.Team = true
	a, srv := startServer(t, cfg, false)
	model := a.preload.ID
	// Team mode takes keys only: one for its first admin.
	key, _, err := a.Keys().Create(context.Background(), auth.NewKey{Name: "admin-key", Person: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, body string) (int, map[string]any, string, string) {
		t.Helper()
		resp, b := servertest.Do(t, method, srv.URL+path, body, "Authorization", "Bearer "+key)
		var v map[string]any
		_ = json.Unmarshal(b, &v)
		return resp.StatusCode, v, string(b), resp.Header.Get("Retry-After")
	}
	errCode := func(v map[string]any) any {
		e, _ := v["error"].(map[string]any)
		return e["code"]
	}
	if code, _, body, _ := do("POST", "/v1/admin/lanes", `{"name": "main", "device": "cpu", "engine": "local", "model": "`+model+`"}`); code != 201 {
		t.Fatalf("add: %d %s", code, body)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, v, body, _ := do("GET", "/v1/admin/lanes", "")
		if data, _ := v["data"].([]any); len(data) == 1 && data[0].(map[string]any)["state"] == "serving" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lane did not serve: %s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	chat := func(name string) (int, map[string]any, string) {
		code, v, _, retry := do("POST", "/v1/chat/completions", `{"model": "`+name+`", "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}`)
		return code, v, retry
	}
	// (An empty model field is refused by the OpenAI dialect's decode before any routing.)
	for _, name := range []string{model, "no-such-model"} {
		if code, v, _ := chat(name); code != 200 || v["model"] != model {
			t.Fatalf("chat %q: %d %v", name, code, v)
		}
	}
	if _, v, body, _ := do("GET", "/v1/models", ""); len(v["data"].([]any)) != 1 || !strings.Contains(body, model) {
		t.Fatalf("models: %s", body)
	}
	if code, _, body, _ := do("POST", "/v1/admin/lanes", `{"name": "up", "engine": "openai", "model": "qwen", "url": "http://127.0.0.1:9/v1"}`); code != 201 {
		t.Fatalf("add openai: %d %s", code, body)
	}
	// Its upstream refuses connections: the lane cannot start, and says so.
	deadline = time.Now().Add(10 * time.Second)
	for {
		code, v, retry := chat("qwen")
		if code == 503 && errCode(v) == "model_unavailable" && retry != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("qwen on a lane that cannot start: %d %v", code, v)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, v, _, _ := do("PATCH", "/v1/admin/lanes/main", `{"model": "no-such-model"}`); code != 400 || errCode(v) != "model_not_found" {
		t.Fatalf("switch to a missing model: %d %v", code, v)
	}
	for _, name := range []string{"main", "up"} {
		if code, _, body, _ := do("DELETE", "/v1/admin/lanes/"+name, ""); code != 200 {
			t.Fatalf("delete %s: %d %s", name, code, body)
		}
	}
	if code, v, _ := chat(model); code != 409 || errCode(v) != "model_not_loaded" {
		t.Fatalf("after removing the lane: %d %v", code, v)
	}
}
