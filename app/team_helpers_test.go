package app

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/server/servertest"
)

// teamPeople adds people to cfg's data folder through the CLI, the first as an admin, each
// with a key of their own (named NAME-key), and returns the keys by name.
func teamPeople(t *testing.T, cfg Config, names ...string) map[string]string {
	t.Helper()
	keys := map[string]string{}
	for i, name := range names {
		args := []string{"users", "add", name, "--data-dir", cfg.DataDir}
		if i == 0 {
			args = append(args, "--admin")
		}
		if code, _, errOut := cli(args...); code != 0 {
			t.Fatalf("users add %s: %d %s", name, code, errOut)
		}
		code, out, errOut := cli("keys", "create", name+"-key", "--user", name, "--data-dir", cfg.DataDir)
		if code != 0 {
			t.Fatalf("keys create for %s: %d %s", name, code, errOut)
		}
		keys[name] = strings.TrimSpace(out)
	}
	return keys
}

// teamCaller sends requests to base as one of the people whose keys keys holds, returning the
// status, the decoded JSON and the raw body.
func teamCaller(t *testing.T, base string, keys map[string]string) func(who, method, path, body string) (int, map[string]any, string) {
	return func(who, method, path, body string) (int, map[string]any, string) {
		t.Helper()
		resp, b := servertest.Do(t, method, base+path, body, "Authorization", "Bearer "+keys[who], "Content-Type", "application/json")
		var v map[string]any
		_ = json.Unmarshal(b, &v)
		return resp.StatusCode, v, string(b)
	}
}

// teamCall is what teamCaller returns.
type teamCall = func(who, method, path, body string) (int, map[string]any, string)

// addLanes adds each lane (a body of POST /v1/admin/lanes) as the admin "root" and waits until
// the lanes are serving: want names each lane's model.
func addLanes(t *testing.T, do teamCall, want map[string]string, bodies ...string) {
	t.Helper()
	for _, body := range bodies {
		if code, _, out := do("root", "POST", "/v1/admin/lanes", body); code != 201 {
			t.Fatalf("add lane %s: %d %s", body, code, out)
		}
	}
	waitLanes(t, do, want)
}

// waitLanes waits until exactly the lanes of want serve their models.
func waitLanes(t *testing.T, do teamCall, want map[string]string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		_, v, body := do("root", "GET", "/v1/admin/lanes", "")
		data, _ := v["data"].([]any)
		ok := len(data) == len(want)
		for _, d := range data {
			l, _ := d.(map[string]any)
			name, _ := l["name"].(string)
			ok = ok && l["state"] == "serving" && l["model"] == want[name]
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("lanes not serving %v: %s", want, body)
		}
	}
}

// serveMainLane adds a local lane "main" serving model and waits until it serves.
func serveMainLane(t *testing.T, do teamCall, model string) {
	t.Helper()
	addLanes(t, do, map[string]string{"main": model}, `{"name": "main", "device": "cpu", "engine": "local", "model": "`+model+`"}`)
}
