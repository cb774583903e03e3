package app

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/server/auth"
)

// TestWebAdminLoadHistoryAndStop: in a --team app on a real worker, a lane serving a written
// model, stopped by hand through /api/admin/runtime/manual, unloads it; the load history lists
// the load and the unload with the lane, from the model events app records.
func TestWebAdminLoadHistoryAndStop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := gguftest.WriteTinyLlama(path, gguftest.TinyLlamaOptions{Seed: 7}); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, "")
	cfg.Team = true
	a, srv := startServer(t, cfg, false)
	ctx := context.Background()
	if _, err := a.svc.Manager().Catalog().AddLocal(ctx, path, "tiny"); err != nil {
		t.Fatal(err)
	}
	key, _, err := a.keys.Create(ctx, auth.NewKey{Name: "adm", Person: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	call := func(method, p, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+p, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := call("POST", "/api/admin/lanes", `{"name": "main", "device": "cpu", "engine": "local", "model": "tiny"}`); code != 201 {
		t.Fatalf("add lane: %d %s", code, body)
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Minute); !ok(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 2 minutes", what)
			}
		}
	}
	waitFor("the lane serves", func() bool {
		_, body := call("GET", "/api/admin/lanes", "")
		return strings.Contains(body, `"state":"serving"`)
	})
	if code, body := call("GET", "/api/admin/runtime", ""); code != 200 || !strings.Contains(body, `"id":"tiny","state":"loaded"`) || !strings.Contains(body, `"lanes":["main"]`) {
		t.Errorf("runtime with the model loaded: %d %s", code, body)
	}
	if code, body := call("POST", "/api/admin/runtime/manual", `{"action": "stop", "lane": "main"}`); code != 200 {
		t.Fatalf("stop: %d %s", code, body)
	}
	var history string
	waitFor("the unload in the history", func() bool {
		_, history = call("GET", "/api/admin/runtime/history", "")
		return strings.Contains(history, `"event":"unloaded","lane":"main","model":"tiny"`)
	})
	if !strings.Contains(history, `"event":"loaded","lane":"main","model":"tiny"`) || !strings.Contains(history, `"event":"create","lane":"main","model":"tiny"`) {
		t.Errorf("history: %s", history)
	}
	if code, body := call("GET", "/api/admin/audit?action=runtime.stop", ""); code != 200 || !strings.Contains(body, `"target":"main"`) {
		t.Errorf("audit of the stop: %d %s", code, body)
	}
}
