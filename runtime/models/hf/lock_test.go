package hf

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLockFileExcludes: a second holder waits (here: until its context ends); after unlock
// the lock is free again. (flock locks are per open file, so two opens in one process exclude
// each other as two processes would.)
func TestLockFileExcludes(t *testing.T) {
	c := New(Config{})
	path, err := c.lockPath(filepath.Join(t.TempDir(), "m.gguf"))
	if err != nil {
		t.Fatal(err)
	}
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

// TestDownloadLocksUnderTheModelsFolder: a download's lock lives in the configured lock folder
// (the app's <models>/.locks), made 0700 with 0600 files, not in the shared temp folder, where
// anyone could have made the lock's predictable name first.
func TestDownloadLocksUnderTheModelsFolder(t *testing.T) {
	models := t.TempDir()
	locks := filepath.Join(models, ".locks")
	f := newFixture(t, 64<<10, func(c *Config) { c.LockDir = locks })
	f.dir = filepath.Join(models, "hf", "o", "m")
	paths, prog, err := f.download(t, context.Background())
	f.mustComplete(t, paths, prog, err)

	st, err := os.Stat(locks)
	if err != nil {
		t.Fatalf("lock folder: %v", err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("lock folder mode %v, want 0700", st.Mode().Perm())
	}
	entries, err := os.ReadDir(locks)
	if err != nil || len(entries) != 1 {
		t.Fatalf("lock folder holds %v (%v), want one lock", entries, err)
	}
	info, err := entries[0].Info()
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("lock file %s mode %v (%v), want 0600", entries[0].Name(), info.Mode().Perm(), err)
	}
	if got, err := f.c.lockPath(f.final()); err != nil || filepath.Dir(got) != locks || got != filepath.Join(locks, entries[0].Name()) {
		t.Errorf("lock of %s is %s (%v), want the one in %s", f.final(), got, err, locks)
	}

	// Without a lock folder configured: a private .locks beside the download, never the temp dir.
	c := New(Config{})
	got, err := c.lockPath(filepath.Join(f.dir, "x.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(got) != filepath.Join(f.dir, ".locks") {
		t.Errorf("default lock %s, want it in %s", got, filepath.Join(f.dir, ".locks"))
	}
}
