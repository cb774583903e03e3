package app

import (
	"encoding/json"
	"strings"
	"testing"

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
