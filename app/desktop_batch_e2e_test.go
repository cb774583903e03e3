package app

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/superfluid/superfluid/assets"
	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server/core"
)

// TestDesktopStopMidBatch: the desktop's Stop while a batch runs stops the batch too: no line
// is recorded as failed, the model stays unloaded and the batch makes no progress while the
// server is stopped; Start resumes it, and it completes with every line.
func TestDesktopStopMidBatch(t *testing.T) {
	cfg := testConfig(t, "")
	cfg.Parallel = 1
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Port = free.Addr().(*net.TCPAddr).Port
	free.Close()
	a, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.startBackground(); err != nil { // as the desktop app starts
		t.Fatal(err)
	}
	c := newController(a)
	defer c.Close()
	if err := c.StartServer(); err != nil {
		t.Fatal(err)
	}
	client := sdk("http://" + c.Server().Address)
	const lines = 40
	b := createBatch(t, client, batchInput(assets.BundledModelID, lines, 64))
	mid := waitBatch(t, client, b.ID, "a few lines to finish", func(b *openai.Batch) bool {
		return b.RequestCounts.Completed >= 3 || batchEnded(b)
	})
	if batchEnded(mid) {
		t.Fatalf("the batch ended before Stop (%s); make its lines longer", mid.RawJSON())
	}
	if err := c.StopServer(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e, err := a.Manager().Catalog().Lookup(assets.BundledModelID)
	if err != nil {
		t.Fatal(err)
	}
	stopped, err := a.Store().Batch(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // a window in which a batch still running would make progress
	later, err := a.Store().Batch(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st := a.Manager().Status(e).State; st != models.StateUnloaded || later.Failed != 0 || later.Completed != stopped.Completed {
		t.Fatalf("after Stop: the model is %s, %d lines failed, %d lines done then %d; want unloaded, none failed, no progress",
			st, later.Failed, stopped.Completed, later.Completed)
	}
	if err := c.StartServer(); err != nil {
		t.Fatal(err)
	}
	done := waitBatch(t, client, b.ID, "the batch to end after Start", batchEnded)
	if done.Status != openai.BatchStatusCompleted || done.RequestCounts.Completed != lines || done.RequestCounts.Failed != 0 {
		t.Fatalf("after Start: %s", done.RawJSON())
	}
}

// TestDesktopStopCutsARunningReply: Stop gives a reply still running (here the playground's,
// whose reader is slow) a second, then stops it, and returns with the model unloaded and its
// worker gone, not with the unload still draining for the unload drain (two minutes).
func TestDesktopStopCutsARunningReply(t *testing.T) {
	cfg := testConfig(t, "")
	cfg.UnloadDrain = time.Hour // what a Stop must not wait for
	a, c := openController(t, cfg)
	if err := c.StartServer(); err != nil {
		t.Fatal(err)
	}
	e, err := a.Manager().Catalog().Lookup(assets.BundledModelID)
	if err != nil {
		t.Fatal(err)
	}
	pieces := make(chan struct{}, 1)
	replied, stopped := make(chan error, 1), make(chan struct{})
	go func() {
		// A long reply whose reader holds its first piece until Stop has returned (or 5 s have
		// passed, should Stop wait for it): it outlasts Stop's second however fast the model
		// is (a fast one's later pieces merge into one event, so a slow reader alone does not).
		req := &core.ChatRequest{ID: "slow", Endpoint: "playground", Stream: true, Model: assets.BundledModelID,
			Messages:   []chat.Message{{Role: "user", Content: "Once upon a time"}},
			Generation: llm.Request{MaxTokens: 400, IgnoreEOS: true}}
		var once sync.Once
		_, err := a.svc.Chat(context.Background(), req, func(_ int, ev llm.Event) error {
			if ev.Text != "" {
				once.Do(func() {
					pieces <- struct{}{}
					select {
					case <-stopped:
					case <-time.After(5 * time.Second):
					}
				})
			}
			return nil
		})
		replied <- err
	}()
	select {
	case <-pieces:
	case err := <-replied:
		t.Fatalf("the reply ended before Stop: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the reply never started")
	}
	err = c.StopServer()
	close(stopped)
	if err != nil {
		t.Fatal(err)
	}
	if st := a.Manager().Status(e).State; st != models.StateUnloaded {
		t.Fatalf("after Stop the model is %s; want unloaded (its reply stopped)", st)
	}
	select {
	case err := <-replied:
		if !errors.Is(err, models.ErrUnloaded) {
			t.Fatalf("the reply cut by Stop: %v, want ErrUnloaded", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the reply still runs after Stop")
	}
}
