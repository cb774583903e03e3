package models

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"sync/atomic"
	"testing"
)

// A model whose file is gone is fetched back (SetFetch) before it loads, by an explicit Load
// and by a request alike; a fetcher that keeps no copy leaves the file missing.
func TestFetchMissingBeforeLoad(t *testing.T) {
	f := newFixture(t, 1, Config{}, nil)
	ctx := context.Background()
	e, err := f.cat.Lookup("m0")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(e.Path)
	if err != nil {
		t.Fatal(err)
	}
	var fetches atomic.Int32
	f.mgr.SetFetch(func(_ context.Context, path string) error {
		if path != e.Path {
			return fmt.Errorf("not kept: %w", fs.ErrNotExist)
		}
		fetches.Add(1)
		return os.WriteFile(path, data, 0o644)
	})

	// A request: the load fetches first.
	if err := os.Remove(e.Path); err != nil {
		t.Fatal(err)
	}
	if err := generate(f.mgr.Engine(e)); err != nil {
		t.Fatalf("a request for a fetched model: %v", err)
	}
	if fetches.Load() != 1 {
		t.Errorf("fetched %d times, want 1", fetches.Load())
	}
	if _, err := f.mgr.Unload(ctx, "m0"); err != nil {
		t.Fatal(err)
	}

	// An explicit Load of an entry the catalog already sees missing.
	if err := os.Remove(e.Path); err != nil {
		t.Fatal(err)
	}
	if _, err := f.mgr.Load(ctx, "m0"); err != nil {
		t.Fatalf("Load of a fetched model: %v", err)
	}
	if fetches.Load() != 2 {
		t.Errorf("fetched %d times, want 2", fetches.Load())
	}

	// No fetcher: missing stays missing.
	f.mgr.SetFetch(nil)
	f.mgr.Unload(ctx, "m0")
	if err := os.Remove(e.Path); err != nil {
		t.Fatal(err)
	}
	if _, err := f.mgr.Load(ctx, "m0"); err == nil {
		t.Fatalf("Load without a fetcher of a missing file: %v", err)
	}
}
