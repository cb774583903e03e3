package worker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
)

// TestRev21aUnloadHonoursItsDeadline: Unload's doc says that when ctx ends first it kills the
// worker anyway and returns; retire's SIGTERM grace (stopGrace, 10s) ignores ctx, so an idle
// worker that does not exit on SIGTERM (an engine stuck closing, a save on a slow disk) holds
// Unload — and Close, and so the app's shutdown — for the whole grace.
func TestRev21aUnloadHonoursItsDeadline(t *testing.T) {
	c, _ := started(t, "ok,term-stuck")
	if _, err := collect(context.Background(), c, &llm.Request{Prompt: "hi", MaxTokens: 2}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	c.Unload(ctx)
	if took := time.Since(began); took > 3*time.Second {
		t.Errorf("Unload with a 300ms deadline took %v (stopGrace ignores the caller's deadline)", took)
	}
}

// TestRev21aQueuedCallSkipsTheSave: the retire asks the worker to exit politely (so its engine
// saves its lanes to the disk cache) only when Client.calls is 0, but calls counts the calls
// waiting for the unload to finish too: a request for the model arriving during an unload
// turns the unload into a SIGKILL and the lanes are lost unsaved. p.calls (calls on this
// worker) is the count that says whether the worker is idle.
func TestRev21aQueuedCallSkipsTheSave(t *testing.T) {
	c, log := started(t, "slow,term-log")
	release := make(chan struct{})
	gen := generateBlocked(t, c, &llm.Request{Prompt: "inflight", MaxTokens: 5}, release)
	unloaded := make(chan error, 1)
	go func() { unloaded <- c.Unload(context.Background()) }()
	waitFor(t, "the unload to begin", c.unloadInProgress)
	tokenized := make(chan error, 1)
	go func() {
		_, err := c.Tokenize(context.Background(), "during unload", false, false)
		tokenized <- err
	}()
	waitFor(t, "the call to wait", func() bool { return c.InFlight() == 2 })
	close(release)
	<-gen
	if err := <-unloaded; err != nil {
		t.Fatal(err)
	}
	<-tokenized
	time.Sleep(200 * time.Millisecond) // stderr arrives on its own schedule
	if !strings.Contains(log.String(), "sigterm pid=") {
		t.Errorf("the idle worker was SIGKILLed, not asked to exit (no save): a call waiting for the unload counted as busy")
	}
}

// TestRev21aIdleUnloadAsksFirst is the control of TestRev21aQueuedCallSkipsTheSave: with no
// call waiting, the worker gets its SIGTERM.
func TestRev21aIdleUnloadAsksFirst(t *testing.T) {
	c, log := started(t, "ok,term-log")
	if _, err := collect(context.Background(), c, &llm.Request{Prompt: "hi", MaxTokens: 2}); err != nil {
		t.Fatal(err)
	}
	if err := c.Unload(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if !strings.Contains(log.String(), "sigterm pid=") {
		t.Errorf("an idle unload sent no SIGTERM")
	}
}

// TestCloseWaitsForASaveUnloadLeft: an Unload whose deadline ends while the idle worker saves
// its lanes returns, but the save goes on, and Close waits for it: the worker dies with this
// process (Pdeathsig), so an app that shut down at once would lose the save.
func TestCloseWaitsForASaveUnloadLeft(t *testing.T) {
	c, log := started(t, "ok,term-slow")
	if _, err := collect(context.Background(), c, &llm.Request{Prompt: "hi", MaxTokens: 2}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	began := time.Now()
	c.Unload(ctx)
	if took := time.Since(began); took > time.Second {
		t.Fatalf("Unload with a 200ms deadline took %v", took)
	}
	if strings.Contains(log.String(), "saved pid=") {
		t.Fatal("the worker finished saving before Unload returned; the test proves nothing")
	}
	c.Close()
	if !strings.Contains(log.String(), "saved pid=") {
		t.Fatalf("Close returned before the worker finished saving; its log:\n%s", log.String())
	}
}
