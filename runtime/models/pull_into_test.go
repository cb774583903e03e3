package models

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models/hf"
	"github.com/superfluid/superfluid/runtime/models/hf/hftest"
)

// PullInto downloads into the folder it is given (a storage's), not the models folder, and the
// entry points there and serves.
func TestPullInto(t *testing.T) {
	hub := hftest.New()
	defer hub.Close()
	hub.AddFile("owner/tiny-GGUF", "tiny-Q8_0.gguf", tinyBytes(t, 1))
	client := hf.NewSource(hf.Config{Endpoint: hub.URL(), Backoff: 1})
	f := newFixture(t, 0, Config{}, nil)
	ctx := context.Background()
	base := t.TempDir()

	e, err := f.mgr.PullInto(ctx, client, "hf.co/owner/tiny-GGUF:Q8_0", base, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(e.Path, base+string(filepath.Separator)) || strings.HasPrefix(e.Path, f.cat.Dir()) {
		t.Fatalf("entry path %s, want it under %s", e.Path, base)
	}
	if err := generate(f.handle(t, "owner/tiny-GGUF:Q8_0")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.mgr.PullInto(ctx, client, "hf.co/owner/tiny-GGUF:Q8_0", "relative/dir", nil); !errors.Is(err, llm.ErrInvalidInput) {
		t.Errorf("a relative folder: %v, want ErrInvalidInput", err)
	}
}
