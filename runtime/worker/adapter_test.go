package worker

import (
	"context"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

var _ llm.AdapterReleaser = (*Client)(nil)

// TestReleaseAdapter: the client forwards ReleaseAdapter to the worker's engine, and starts no
// worker for it when none runs (a worker that is not running holds no adapters).
func TestReleaseAdapter(t *testing.T) {
	ctx := context.Background()
	c, log := newClient(t, "ok")
	if err := c.ReleaseAdapter(ctx, "/adapters/a.gguf"); err != nil || c.Loaded() {
		t.Fatalf("ReleaseAdapter with no worker = %v, loaded %v; want nil and no worker started", err, c.Loaded())
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.ReleaseAdapter(ctx, "/adapters/a.gguf"); err != nil {
		t.Fatalf("ReleaseAdapter: %v", err)
	}
	waitFor(t, "the worker to log the release", func() bool {
		return strings.Contains(log.String(), `release adapter "/adapters/a.gguf"`)
	})
	if n := strings.Count(log.String(), "loading pid="); n != 1 {
		t.Errorf("%d workers started, want 1 (none for the first release)\nlog:\n%s", n, log)
	}
}
