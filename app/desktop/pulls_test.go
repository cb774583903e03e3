package desktop_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/app/desktop"
	"github.com/superfluid/superfluid/runtime/backends"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/runtime/models/hf"
	"github.com/superfluid/superfluid/runtime/models/hf/hftest"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/store"
)

// fakeRunner is a fake worker that is always ready (the pulls here load nothing).
type fakeRunner struct{ *enginetest.Engine }

func (fakeRunner) Start(context.Context) error                  { return nil }
func (fakeRunner) Unload(context.Context) error                 { return nil }
func (fakeRunner) Loaded() bool                                 { return true }
func (fakeRunner) ReleaseAdapter(context.Context, string) error { return nil }
func (fakeRunner) Slots(context.Context) (llm.Slots, error)     { return llm.Slots{}, nil }

// startApp is the desktop app's start over dataDir, as app.Open builds it: the store, the
// catalog in <data>/models, the manager and the core pulling from hub; stop closes them all,
// as quitting the app does.
func startApp(t *testing.T, dataDir string, hub *hftest.Server) (c *desktop.Controller, st *store.Store, stop func()) {
	t.Helper()
	st, err := store.Open(filepath.Join(dataDir, "superfluid.db"))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := models.OpenCatalog(context.Background(), st, filepath.Join(dataDir, "models"))
	if err != nil {
		t.Fatal(err)
	}
	mgr := models.NewManager(cat, models.Config{MemoryBudget: 1 << 40,
		NewRunner: func(*models.Entry, bool) models.Runner { return fakeRunner{enginetest.New(512, "Once")} }})
	src := hf.NewSource(hf.Config{Endpoint: hub.URL(), Backoff: 1})
	cat.NameBy(src)
	svc := core.NewCatalog(core.Config{}, st, mgr, src)
	c = desktop.New(desktop.Deps{Service: svc, Store: st, Handler: http.NotFoundHandler(), Host: "127.0.0.1", Port: 1,
		Expose: func(string) error { return nil }, StopBackground: func(context.Context) error { return nil },
		StartBackground: func() error { return nil }, Runtimes: func() []backends.Backend { return nil }})
	var once bool
	stop = func() {
		if once {
			return
		}
		once = true
		c.Close()
		mgr.Close()
		st.Close()
	}
	t.Cleanup(stop)
	return c, st, stop
}

// TestPullResumesAfterRestart: a download cut by quitting the app stays recorded; the next
// start (a new controller over the same data dir) lists it, and pulling it again asks the Hub
// only for the bytes after the partial file and registers the model. Once done, cancelled by
// the user or failed, a pull is no longer recorded.
func TestPullResumesAfterRestart(t *testing.T) {
	hub := hftest.New()
	defer hub.Close()
	const repo, file, ref = "owner/big", "big-Q8_0.gguf", "hf.co/owner/big:Q8_0"
	data := servertest.TinyModel(t, gguftest.TinyLlamaOptions{Seed: 7})
	hub.AddFile(repo, file, data)
	cut := int64(len(data) / 2)
	hub.Faults(repo, file).StallAt.Store(cut)
	dataDir := t.TempDir()

	c, _, quit := startApp(t, dataDir, hub)
	done := make(chan error, 1)
	go func() { done <- c.Pull(context.Background(), ref) }()
	partial := filepath.Join(dataDir, "models", "hf", "owner", "big", hftest.Commit, file+".partial")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if st, err := os.Stat(partial); err == nil && st.Size() >= cut {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the partial never reached the stall")
		}
		time.Sleep(10 * time.Millisecond)
	}
	quit()
	if err := <-done; err == nil {
		t.Fatal("the pull finished although the app quit")
	}

	c, st, _ := startApp(t, dataDir, hub)
	if got := c.PendingPulls(); !slices.Equal(got, []string{ref}) {
		t.Fatalf("pending after the restart: %v", got)
	}
	if err := c.Pull(context.Background(), ref); err != nil {
		t.Fatalf("the resumed pull: %v", err)
	}
	ranges := hub.Ranges(repo, file)
	if len(ranges) == 0 || ranges[len(ranges)-1] != fmt.Sprintf("bytes=%d-", cut) {
		t.Fatalf("ranges %v, want the last from %d", ranges, cut)
	}
	if got := c.PendingPulls(); len(got) != 0 {
		t.Fatalf("still pending after it finished: %v", got)
	}
	if m := state(c, ref); m.ID != ref || m.Size != int64(len(data)) {
		t.Fatalf("the model after the resume: %+v", m)
	}

	// Failed for good, and cancelled by the user: not resumed.
	if err := c.Pull(context.Background(), "hf.co/owner/nothing:Q8_0"); err == nil {
		t.Fatal("a pull of a missing repository worked")
	}
	hub.AddFile("owner/slow", "slow-Q8_0.gguf", data)
	hub.Faults("owner/slow", "slow-Q8_0.gguf").StallAt.Store(cut)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for hub.BytesSent("owner/slow", "slow-Q8_0.gguf") == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	if err := c.Pull(ctx, "hf.co/owner/slow:Q8_0"); err == nil || !strings.Contains(err.Error(), "cancel") {
		t.Fatalf("cancelled pull: %v", err)
	}
	if got, err := st.PendingPulls(context.Background()); err != nil || len(got) != 0 {
		t.Fatalf("pending after a failure and a cancel: %v %v", got, err)
	}
}
