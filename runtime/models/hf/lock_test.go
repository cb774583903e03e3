package hf

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestLockFileExcludes: a second holder waits (here: until its context ends); after unlock
// the lock is free again. (flock locks are per open file, so two opens in one process exclude
// each other as two processes would.)
func TestLockFileExcludes(t *testing.T) {
	path := lockPath(filepath.Join(t.TempDir(), "m.gguf"))
	unlock, err := lockFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := lockFile(ctx, path); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second lock while held: %v, want it to wait", err)
	}
	unlock()
	unlock2, err := lockFile(context.Background(), path)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	unlock2()
}
