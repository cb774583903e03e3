package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestCommandLaneE2E: serve --team with a `command` lane whose server is a second superfluid
// (this test binary's CLI) that the lane starts and supervises: the lane serves once the
// process answers, a chat reaches it under the lane's model, and removing the lane stops the
// process (its log is kept).
func TestCommandLaneE2E(t *testing.T) {
	t.Setenv(cliEnv, "1") // the lane's process runs this binary as superfluid
	cfg := testConfig(t, testModel)
	cfg.Team = true
	a, srv := startServer(t, cfg, false)
	key, _, err := a.Keys().Create(context.Background(), auth.NewKey{Name: "admin-key", Person: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, body string) (int, map[string]any, string) {
		t.Helper()
		resp, b := servertest.Do(t, method, srv.URL+path, body, "Authorization", "Bearer "+key)
		var v map[string]any
		_ = json.Unmarshal(b, &v)
		return resp.StatusCode, v, string(b)
	}
	model := a.preload.ID
	command := fmt.Sprintf("'%s' serve {model} --port {port} --data-dir '%s' --parallel 2", os.Args[0], t.TempDir())
	lane, _ := json.Marshal(map[string]string{"name": "sup", "device": "cpu", "engine": "command", "model": model, "command": command})
	if code, _, body := do("POST", "/v1/admin/lanes", string(lane)); code != 201 {
		t.Fatalf("add: %d %s", code, body)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		_, v, body := do("GET", "/v1/admin/lanes", "")
		if data, _ := v["data"].([]any); len(data) == 1 && data[0].(map[string]any)["state"] == "serving" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command lane did not serve: %s", body)
		}
	}
	code, v, body := do("POST", "/v1/chat/completions", `{"model": "`+model+`", "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}`)
	usage, _ := v["usage"].(map[string]any)
	if code != 200 || v["model"] != model || usage["completion_tokens"] == nil {
		t.Fatalf("chat through the command lane: %d %s", code, body)
	}
	// The lane's server asks for the lane's own key: a client on this machine calling it
	// directly (around the gateway's keys, bookings and accounting) is refused.
	log := cfg.DataDir + "/logs/lanes/sup.log"
	raw, _ := os.ReadFile(log)
	port := regexp.MustCompile(`"--port" "(\d+)"`).FindSubmatch(raw)
	if port == nil || bytes.Contains(raw, []byte("sk-lane-")) {
		t.Fatalf("the lane's log names no port, or names the lane's key:\n%s", raw)
	}
	direct, _ := servertest.Do(t, "POST", "http://127.0.0.1:"+string(port[1])+"/v1/chat/completions",
		`{"model": "`+model+`", "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}`)
	if direct.StatusCode != 401 {
		t.Errorf("the lane's server called directly without its key: %d, want 401", direct.StatusCode)
	}
	if code, _, body := do("DELETE", "/v1/admin/lanes/sup", ""); code != 200 {
		t.Fatalf("remove: %d %s", code, body)
	}
	if st, err := os.Stat(log); err != nil || st.Size() == 0 {
		t.Errorf("the lane's process log %s: %v", log, err)
	}
	if code, v, _ := do("POST", "/v1/chat/completions", `{"model": "`+model+`", "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}`); code != 409 {
		t.Errorf("after removing the lane: %d %v, want 409 model_not_loaded", code, v)
	}
}
