package models

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

func TestCatalogFindsTheProjectorBeside(t *testing.T) {
	ctx := context.Background()
	cat, st, dir := openTestCatalog(t)
	model := filepath.Join(dir, "vis.gguf")
	writeWidth(t, model, 64, 1)
	writeProjector(t, filepath.Join(dir, "mmproj-wide-F16.gguf"), 4096, false) // another model's
	writeProjector(t, filepath.Join(dir, "mmproj-vis-BF16.gguf"), 64, false)
	writeProjector(t, filepath.Join(dir, "mmproj-vis-F16.gguf"), 64, false)
	e, err := cat.AddLocal(ctx, model, "")
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "mmproj-vis-F16.gguf")
	if e.Projector != want || !e.Facts.Vision || e.Facts.Audio || !slices.Contains(e.Capabilities, CapabilityVision) {
		t.Fatalf("entry: projector %q, vision %v audio %v, capabilities %v; want %s with vision", e.Projector, e.Facts.Vision, e.Facts.Audio, e.Capabilities, want)
	}
	st0, _ := os.Stat(want)
	if e.Facts.ProjectorBytes != st0.Size() {
		t.Errorf("ProjectorBytes = %d, want the file's %d", e.Facts.ProjectorBytes, st0.Size())
	}
	bare := e.Facts
	bare.ProjectorBytes = 0
	if got, without := Estimate(e.Facts, 512, 1), Estimate(bare, 512, 1); got != without+st0.Size() {
		t.Errorf("Estimate = %d, want %d + the projector's %d", got, without, st0.Size())
	}
	// The projectors are no models: not listed, and refused when added as one.
	for _, l := range cat.List() {
		if strings.Contains(l.ID, "mmproj") {
			t.Errorf("a projector is listed as a model: %s", l.ID)
		}
	}
	_, err = cat.AddLocal(ctx, want, "")
	if !errors.Is(err, ErrIsProjector) || !errors.Is(err, ErrNotModel) || !strings.Contains(err.Error(), "--mmproj") {
		t.Errorf("adding a projector as a model: %v", err)
	}
	// Reopened from the store, the entry still knows what its projector encodes.
	again, err := OpenCatalog(ctx, st, cat.Dir())
	if err != nil {
		t.Fatal(err)
	}
	re, err := again.Lookup("vis")
	if err != nil || re.Projector != want || !re.Facts.Vision || re.Facts.ProjectorBytes == 0 {
		t.Fatalf("reopened: %+v, %v", re, err)
	}
}

func TestCatalogAudioProjector(t *testing.T) {
	cat, _, dir := openTestCatalog(t)
	model := filepath.Join(dir, "ears.gguf")
	writeWidth(t, model, 64, 2)
	writeProjector(t, filepath.Join(dir, "ears-mmproj.gguf"), 64, true)
	e, err := cat.AddLocal(context.Background(), model, "")
	if err != nil {
		t.Fatal(err)
	}
	if !e.Facts.Audio || e.Facts.Vision || !slices.Contains(e.Capabilities, CapabilityAudio) || slices.Contains(e.Capabilities, CapabilityVision) {
		t.Fatalf("audio projector: facts %+v, capabilities %v", e.Facts, e.Capabilities)
	}
}

func TestCatalogAddWithProjector(t *testing.T) {
	ctx := context.Background()
	cat, _, dir := openTestCatalog(t)
	model := filepath.Join(dir, "m.gguf")
	writeWidth(t, model, 64, 3)
	elsewhere := t.TempDir()
	wide := filepath.Join(elsewhere, "mmproj-wide.gguf")
	writeProjector(t, wide, 128, false)
	fits := filepath.Join(elsewhere, "proj-a.gguf") // any name, when named
	writeProjector(t, fits, 64, false)
	fits2 := filepath.Join(elsewhere, "proj-b.gguf")
	writeProjector(t, fits2, 64, true)

	// A projector for another text model: refused, naming both files and both widths.
	_, err := cat.Add(ctx, AddRequest{Path: model, Projector: wide})
	if !errors.Is(err, llm.ErrInvalidInput) {
		t.Fatalf("a projector of another width: %v", err)
	}
	for _, s := range []string{model, wide, "128-wide", "64-wide"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("the refusal lacks %q: %v", s, err)
		}
	}
	if _, err := cat.Lookup("m"); !errors.Is(err, llm.ErrModelNotFound) {
		t.Errorf("the refused model was registered: %v", err)
	}
	e, err := cat.Add(ctx, AddRequest{Path: model, Projector: fits})
	if err != nil || e.Projector != fits || !e.Facts.Vision {
		t.Fatalf("a projector that fits: %+v, %v", e, err)
	}
	// Added again without one (serve m.gguf does this at every start), it keeps its projector.
	if e, err = cat.AddLocal(ctx, model, ""); err != nil || e.Projector != fits {
		t.Fatalf("added again: projector %q, %v", e.Projector, err)
	}
	// Added again with another, the entry changes.
	if e, err = cat.Add(ctx, AddRequest{Path: model, Projector: fits2}); err != nil || e.Projector != fits2 || !e.Facts.Audio || e.Facts.Vision {
		t.Fatalf("another projector: %+v, %v", e, err)
	}
	// The projector gone: the next add drops it (none beside the model fits).
	os.Remove(fits2)
	if e, err = cat.Add(ctx, AddRequest{Path: model}); err != nil || e.Projector != "" || e.Facts.Audio {
		t.Fatalf("projector removed, added again: %+v, %v", e, err)
	}
}

func TestLoadRefusesAProjectorThatNoLongerFits(t *testing.T) {
	f := newFixture(t, 0, Config{}, nil)
	ctx := context.Background()
	dir := filepath.Dir(f.cat.Dir())
	model := filepath.Join(dir, "seer.gguf")
	writeWidth(t, model, 64, 4)
	proj := filepath.Join(t.TempDir(), "mmproj-seer.gguf") // elsewhere: named with --mmproj
	writeProjector(t, proj, 64, false)
	e, err := f.cat.Add(ctx, AddRequest{Path: model, Projector: proj})
	if err != nil || e.Projector != proj {
		t.Fatalf("add: %+v, %v", e, err)
	}
	writeProjector(t, proj, 96, false) // replaced behind the catalog's back
	_, err = f.mgr.Load(ctx, "seer")
	if !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), "mmproj-seer.gguf") || !strings.Contains(err.Error(), "seer.gguf") ||
		!strings.Contains(err.Error(), "96-wide") || strings.Contains(err.Error(), filepath.Dir(proj)) {
		t.Fatalf("load with a projector that does not fit (named by base name): %v", err)
	}
	f.mu.Lock()
	r := f.runners[model]
	f.mu.Unlock()
	if r != nil && r.starts.Load() > 0 {
		t.Error("the worker started although the projector does not fit")
	}
	writeProjector(t, proj, 64, false)
	if _, err := f.mgr.Load(ctx, "seer"); err != nil {
		t.Fatalf("load once it fits again: %v", err)
	}
}

// TestCatalogProjectorNamedForTheModel: in a folder of two models with a projector each, both
// fitting either model, each model gets the projector named after it.
func TestCatalogProjectorNamedForTheModel(t *testing.T) {
	ctx := context.Background()
	cat, _, dir := openTestCatalog(t)
	for _, name := range []string{"stories-audio", "stories-vision"} {
		writeWidth(t, filepath.Join(dir, name+".gguf"), 64, 1)
		writeProjector(t, filepath.Join(dir, "mmproj-"+name+".gguf"), 64, name == "stories-audio")
	}
	for _, name := range []string{"stories-vision", "stories-audio"} {
		e, err := cat.AddLocal(ctx, filepath.Join(dir, name+".gguf"), "")
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(dir, "mmproj-"+name+".gguf"); e.Projector != want {
			t.Errorf("%s: projector %q, want %q", name, e.Projector, want)
		}
	}
}
