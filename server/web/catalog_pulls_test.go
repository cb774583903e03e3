package web

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/superfluid/superfluid/server/core"
)

func TestPullTrackerProgress(t *testing.T) {
	tr := newPullTracker(nil)
	step := make(chan core.PullProgress)
	ack := make(chan struct{})
	release := make(chan error)
	p := tr.start("hf.co/o/r:Q4_K_M", "", func(ctx context.Context, progress func(core.PullProgress)) (string, error) {
		for pp := range step {
			progress(pp)
			ack <- struct{}{}
		}
		return "r-Q4_K_M", <-release
	})
	if p.Status != PullQueued || p.FinishedAt != nil {
		t.Fatalf("a new pull = %+v, want queued", p)
	}
	if again := tr.start("hf.co/o/r:Q4_K_M", "", nil); again.ID != p.ID {
		t.Errorf("a second start of the same running pull made %s, want %s", again.ID, p.ID)
	}
	seen := func() Pull {
		got, ok := tr.get(p.ID)
		if !ok {
			t.Fatalf("pull %s is gone", p.ID)
		}
		return got
	}
	// Two files: the totals add up.
	send := func(pp core.PullProgress) { step <- pp; <-ack }
	send(core.PullProgress{File: "a-00001-of-00002.gguf", Status: core.PullPulling, Total: 100, Completed: 10})
	send(core.PullProgress{File: "a-00002-of-00002.gguf", Status: core.PullPulling, Total: 50, Completed: 5})
	if got := seen(); got.Status != PullDownloading || got.CompletedBytes != 15 || got.TotalBytes != 150 {
		t.Errorf("after two files began: %+v, want downloading 15/150", got)
	}
	send(core.PullProgress{File: "a-00001-of-00002.gguf", Status: core.PullVerifying, Total: 100, Completed: 100})
	if got := seen(); got.Status != PullVerifying || got.CompletedBytes != 105 {
		t.Errorf("while verifying: %+v", got)
	}
	close(step)
	release <- nil
	tr.wait()
	if got := seen(); got.Status != PullDone || got.CompletedBytes != 150 || got.FinishedAt == nil || got.Catalog != "r-Q4_K_M" {
		t.Errorf("after the pull: %+v, want done 150/150 with a finish time", got)
	}
}

func TestPullTrackerKeepsFiftyFinished(t *testing.T) {
	tr := newPullTracker(nil)
	fail := func(context.Context, func(core.PullProgress)) (string, error) {
		return "", errors.New("no such repository")
	}
	var first Pull
	for i := range keepFinishedPulls + 5 {
		p := tr.start(fmt.Sprintf("hf.co/o/r%d:Q8_0", i), "", fail)
		if i == 0 {
			first = p
		}
		tr.wait()
	}
	list := tr.list()
	if len(list) != keepFinishedPulls {
		t.Fatalf("kept %d pulls, want %d", len(list), keepFinishedPulls)
	}
	if list[0].Model != fmt.Sprintf("hf.co/o/r%d:Q8_0", keepFinishedPulls+4) || list[0].Status != PullFailed || list[0].Error != "no such repository" {
		t.Errorf("newest = %+v", list[0])
	}
	if _, ok := tr.get(first.ID); ok {
		t.Errorf("the oldest finished pull is still kept")
	}
}

// TestPullTrackerCloseCancelsRunningPulls: at shutdown a running pull's context ends and close
// returns only once the pull has, so no pull writes into a manager or store closed after it.
func TestPullTrackerCloseCancelsRunningPulls(t *testing.T) {
	tr := newPullTracker(nil)
	started := make(chan struct{})
	var ended atomic.Bool
	tr.start("hf.co/o/r:Q4_K_M", "", func(ctx context.Context, _ func(core.PullProgress)) (string, error) {
		close(started)
		<-ctx.Done() // a download blocks until its context ends
		time.Sleep(50 * time.Millisecond)
		ended.Store(true)
		return "", ctx.Err()
	})
	<-started
	closed := make(chan struct{})
	go func() { tr.close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("close did not end the running pull")
	}
	if !ended.Load() {
		t.Fatal("close returned while the pull still ran")
	}
	if got := tr.list(); len(got) != 1 || got[0].Status != PullFailed || got[0].FinishedAt == nil {
		t.Fatalf("after close: %+v, want the pull failed and finished", got)
	}
}
