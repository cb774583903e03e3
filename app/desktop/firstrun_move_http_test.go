package desktop_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestMoveModelsGuardsHTTPClients: the desktop's move and the HTTP API share one guard. A
// download an API client started stops the move, naming it; while the move copies, an API
// client's load, delete, pull and chat are 409s that name the move, and the move completes
// with every model in the new folder.
func TestMoveModelsGuardsHTTPClients(t *testing.T) {
	c, cat, ids := withPulled(t)
	srv := httptest.NewServer(server.New(server.Config{}, cat.Svc))
	t.Cleanup(srv.Close)

	data := servertest.TinyModel(t, gguftest.TinyLlamaOptions{Seed: 3})
	cat.Hub.AddFile("owner/slow", "slow-Q8_0.gguf", data)
	cat.Hub.Faults("owner/slow", "slow-Q8_0.gguf").StallAt.Store(int64(len(data) / 2))
	ctx, cancel := context.WithCancel(context.Background())
	pulled := make(chan struct{})
	go func() {
		defer close(pulled)
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/api/pull", strings.NewReader(`{"model": "hf.co/owner/slow:Q8_0"}`))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body) // read on: a client that hangs up cancels the pull
			resp.Body.Close()
		}
	}()
	for cat.Hub.BytesSent("owner/slow", "slow-Q8_0.gguf") == 0 {
		select {
		case <-pulled:
			t.Fatal("the pull ended")
		default:
		}
	}
	err := c.MoveModels(context.Background(), t.TempDir(), nil)
	cancel()
	<-pulled
	if err == nil || !strings.Contains(err.Error(), "the download of hf.co/owner/slow:Q8_0 is running; wait for it to finish or cancel it") {
		t.Fatalf("move during an API pull: %v", err)
	}
	// The server ends the cancelled pull after its client left: wait for the guard to free.
	servertest.WaitMoveAllowed(t, cat.Svc)

	copying, release := holdCopy(c)
	dir := filepath.Join(t.TempDir(), "new")
	done := make(chan error, 1)
	go func() { done <- c.MoveModels(context.Background(), dir, nil) }()
	select {
	case <-copying:
	case err := <-done:
		t.Fatalf("the move ended before it copied: %v", err)
	}
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/v1/models/load", `{"model": "` + ids[1] + `"}`},
		{"DELETE", "/api/delete", `{"model": "` + ids[1] + `"}`},
		{"POST", "/api/pull", `{"model": "hf.co/owner/slow:Q8_0", "stream": false}`},
		{"POST", "/v1/chat/completions", `{"model": "` + ids[0] + `", "messages": [{"role": "user", "content": "hi"}]}`},
	} {
		resp, body := servertest.Do(t, r.method, srv.URL+r.path, r.body)
		if resp.StatusCode != http.StatusConflict || !strings.Contains(string(body), "the models folder is being moved") {
			t.Errorf("%s %s during the move: %d %s", r.method, r.path, resp.StatusCode, body)
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if !strings.HasPrefix(entry(t, cat, id).Path, dir) {
			t.Errorf("%s is not in the new folder: %s", id, entry(t, cat, id).Path)
		}
	}
	if resp, body := servertest.Do(t, "POST", srv.URL+"/v1/models/load", `{"model": "`+ids[1]+`"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("load after the move: %d %s", resp.StatusCode, body)
	}
}
