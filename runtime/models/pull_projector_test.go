package models

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/superfluid/superfluid/runtime/models/hf"
	"github.com/superfluid/superfluid/runtime/models/hf/hftest"
)

// fileBytes is what write puts in a file.
func fileBytes(t *testing.T, write func(path string)) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f.gguf")
	write(path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPullFetchesTheProjector(t *testing.T) {
	hub := hftest.New()
	defer hub.Close()
	model := tinyBytes(t, 1) // 64 wide
	fits := fileBytes(t, func(p string) { writeProjector(t, p, 64, false) })
	hub.AddFile("owner/vis-GGUF", "vis-Q8_0.gguf", model)
	hub.AddFile("owner/vis-GGUF", "mmproj-vis-F16.gguf", fits)
	hub.AddFile("owner/vis-GGUF", "mmproj-vis-BF16.gguf", fits)
	hub.AddFile("owner/odd-GGUF", "odd-Q8_0.gguf", model)
	hub.AddFile("owner/odd-GGUF", "mmproj-F16.gguf", fileBytes(t, func(p string) { writeProjector(t, p, 4096, false) }))
	hub.AddFile("owner/late-GGUF", "late-Q8_0.gguf", model)
	src := hf.NewSource(hf.Config{Endpoint: hub.URL(), Backoff: 1})
	f := newFixture(t, 0, Config{}, nil)
	ctx := context.Background()

	var seen []string
	e, err := f.mgr.Pull(ctx, src, "hf.co/owner/vis-GGUF:Q8_0", func(p hf.Progress) {
		if !slices.Contains(seen, p.File) {
			seen = append(seen, p.File)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(filepath.Dir(e.Path), "mmproj-vis-F16.gguf")
	if e.Projector != want || !e.Facts.Vision || !slices.Contains(e.Capabilities, CapabilityVision) {
		t.Fatalf("pulled entry: projector %q vision %v capabilities %v; want %s", e.Projector, e.Facts.Vision, e.Capabilities, want)
	}
	if !slices.Equal(seen, []string{"vis-Q8_0.gguf", "mmproj-vis-F16.gguf"}) {
		t.Errorf("downloaded %q, want the model then its F16 projector", seen)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(e.Path), "mmproj-vis-BF16.gguf")); !os.IsNotExist(err) {
		t.Errorf("the other projector was downloaded too: %v", err)
	}
	if got, err := fileSHA256(want); err != nil || got != hub.SHA256("owner/vis-GGUF", "mmproj-vis-F16.gguf") {
		t.Errorf("the projector on disk has sha256 %s (%v), the hub's is %s", got, err, hub.SHA256("owner/vis-GGUF", "mmproj-vis-F16.gguf"))
	}

	// A repository's projector that does not fit: the model is pulled without it.
	e, err = f.mgr.Pull(ctx, src, "hf.co/owner/odd-GGUF:Q8_0", nil)
	if err != nil || e.Projector != "" || e.Facts.Vision {
		t.Fatalf("pull with a projector of another width: %+v, %v", e, err)
	}

	// Pulled before the repository had a projector: pulling again fetches only the projector.
	if e, err = f.mgr.Pull(ctx, src, "hf.co/owner/late-GGUF:Q8_0", nil); err != nil || e.Projector != "" {
		t.Fatalf("first pull: %+v, %v", e, err)
	}
	hub.AddFile("owner/late-GGUF", "mmproj-late-F16.gguf", fits)
	modelBytes := hub.BytesSent("owner/late-GGUF", "late-Q8_0.gguf")
	seen = nil
	e, err = f.mgr.Pull(ctx, src, "hf.co/owner/late-GGUF:Q8_0", func(p hf.Progress) {
		if !slices.Contains(seen, p.File) {
			seen = append(seen, p.File)
		}
	})
	if err != nil || e.Projector != filepath.Join(filepath.Dir(e.Path), "mmproj-late-F16.gguf") || !e.Facts.Vision {
		t.Fatalf("second pull: %+v, %v", e, err)
	}
	if !slices.Equal(seen, []string{"mmproj-late-F16.gguf"}) || hub.BytesSent("owner/late-GGUF", "late-Q8_0.gguf") != modelBytes {
		t.Errorf("second pull downloaded %q (model bytes %d → %d), want the projector alone",
			seen, modelBytes, hub.BytesSent("owner/late-GGUF", "late-Q8_0.gguf"))
	}
}

func TestPullAnAdapter(t *testing.T) {
	hub := hftest.New()
	defer hub.Close()
	hub.AddFile("owner/tiny-GGUF", "tiny-Q8_0.gguf", tinyBytes(t, 1))
	hub.AddFile("owner/tiny-style-LoRA-GGUF", "tiny-style-lora-F32.gguf", fileBytes(t, func(p string) { writeAdapter(t, p, 64) }))
	src := hf.NewSource(hf.Config{Endpoint: hub.URL(), Backoff: 1})
	f := newFixture(t, 0, Config{}, nil)
	ctx := context.Background()
	base, err := f.mgr.Pull(ctx, src, "hf.co/owner/tiny-GGUF:Q8_0", nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := f.mgr.Pull(ctx, src, "hf.co/owner/tiny-style-LoRA-GGUF", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !e.IsAdapter() || e.BaseModel != base.ID || e.Source != SourceHuggingFace {
		t.Fatalf("pulled adapter %+v", e.Record)
	}
	if got := ids(f.cat.Adapters(base.ID)); got != e.ID {
		t.Errorf("Adapters(%s) = %q, want %s", base.ID, got, e.ID)
	}
	// Pulled again: the same entry, nothing new.
	if again, err := f.mgr.Pull(ctx, src, "hf.co/owner/tiny-style-LoRA-GGUF", nil); err != nil || again.ID != e.ID {
		t.Fatalf("pull again: %v, %v", again, err)
	}
}
