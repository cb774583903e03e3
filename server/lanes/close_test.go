package lanes_test

import (
	"context"
	"testing"
	"time"
)

// TestCloseEndsEveryLane: a Close whose ctx ends while one lane still drains has still ended
// every lane, so the others' engines are released (a command lane's process stopped).
func TestCloseEndsEveryLane(t *testing.T) {
	b := newBench(t)
	b.add("first", "cuda:0", "alpha")
	b.add("second", "cuda:1", "beta")
	done := make(chan error, 1)
	go func() { _, err := b.chat("", "alpha"); done <- err }() // holds the first lane
	<-b.started
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := b.mgr.Close(ctx); err == nil {
		t.Fatal("Close returned nil with a request still running")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, released := b.counts("beta")
		if released == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Close gave up on lane first's drain and left lane second's engine running: beta released %d times", released)
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.open()
	if err := <-done; err != nil {
		t.Fatalf("the running request: %v", err)
	}
}
