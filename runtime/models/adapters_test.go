package models

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

func ids(entries []*Entry) string {
	var out []string
	for _, e := range entries {
		out = append(out, e.ID)
	}
	return strings.Join(out, " ")
}

func TestCatalogAdapters(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 0, Config{}, nil)
	cat := f.cat
	dir := filepath.Dir(cat.Dir())
	writeWidth(t, filepath.Join(dir, "base.gguf"), 64, 1)
	writeWidth(t, filepath.Join(dir, "wide.gguf"), 128, 2)
	for _, name := range []string{"base.gguf", "wide.gguf"} {
		if _, err := cat.AddLocal(ctx, filepath.Join(dir, name), ""); err != nil {
			t.Fatal(err)
		}
	}
	lora := filepath.Join(dir, "style-lora.gguf")
	writeAdapter(t, lora, 64)

	// The one model it fits is its base.
	e, err := cat.AddLocal(ctx, lora, "")
	if err != nil {
		t.Fatal(err)
	}
	if !e.IsAdapter() || e.Kind != KindAdapter || e.BaseModel != "base" || e.Projector != "" || len(e.Capabilities) != 0 {
		t.Fatalf("adapter entry %+v", e.Record)
	}
	// Listed under its base, not as a model; refused where a model is wanted, saying what to do.
	if got := ids(cat.List()); got != "base wide" {
		t.Errorf("List = %q, want the models only", got)
	}
	if got := ids(cat.Adapters("base")); got != "style-lora" {
		t.Errorf("Adapters(base) = %q", got)
	}
	if got := ids(cat.Adapters("wide")); got != "" {
		t.Errorf("Adapters(wide) = %q, want none", got)
	}
	_, err = cat.Lookup("style-lora")
	if !errors.Is(err, ErrIsAdapter) || !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), "LoRA adapter of base") {
		t.Errorf("Lookup of an adapter: %v", err)
	}
	if _, err := f.mgr.Load(ctx, "style-lora"); !errors.Is(err, ErrIsAdapter) {
		t.Errorf("Load of an adapter: %v", err)
	}
	if got, err := cat.LookupAdapter("style-lora"); err != nil || got.ID != "style-lora" {
		t.Errorf("LookupAdapter = %v, %v", got, err)
	}
	if _, err := cat.LookupAdapter("base"); !errors.Is(err, llm.ErrInvalidInput) {
		t.Errorf("LookupAdapter of a model: %v", err)
	}

	// Named for a model it does not fit: refused, naming both files.
	other := filepath.Join(dir, "other-lora.gguf")
	writeAdapter(t, other, 64)
	_, err = cat.Add(ctx, AddRequest{Path: other, Base: "wide"})
	if !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), "wide.gguf") || !strings.Contains(err.Error(), "other-lora.gguf") {
		t.Fatalf("an adapter for another model: %v", err)
	}
	if _, err := cat.LookupAdapter("other-lora"); !errors.Is(err, llm.ErrModelNotFound) {
		t.Errorf("the refused adapter was registered: %v", err)
	}
	// A base given to a model: refused.
	if _, err := cat.Add(ctx, AddRequest{Path: filepath.Join(dir, "base.gguf"), ID: "base2", Base: "wide"}); !errors.Is(err, llm.ErrInvalidInput) {
		t.Errorf("a model with a base: %v", err)
	}

	// Two models it fits: no base is guessed, until one is named.
	writeWidth(t, filepath.Join(dir, "twin.gguf"), 64, 3)
	if _, err := cat.AddLocal(ctx, filepath.Join(dir, "twin.gguf"), ""); err != nil {
		t.Fatal(err)
	}
	e, err = cat.AddLocal(ctx, other, "")
	if err != nil || e.BaseModel != "" {
		t.Fatalf("an adapter two models fit: %+v, %v", e, err)
	}
	if got := ids(cat.Adapters("")); got != "other-lora style-lora" {
		t.Errorf("Adapters(\"\") = %q", got)
	}
	if e, err = cat.Add(ctx, AddRequest{Path: other, Base: "twin"}); err != nil || e.BaseModel != "twin" {
		t.Fatalf("base named: %+v, %v", e, err)
	}
	// An alias of the base lists the same adapters.
	if _, err := cat.Copy(ctx, "twin", "twin-copy"); err != nil {
		t.Fatal(err)
	}
	if got := ids(cat.Adapters("twin-copy")); got != "other-lora" {
		t.Errorf("Adapters(alias) = %q", got)
	}
	// Removed like a model.
	if _, _, err := f.mgr.Remove(ctx, "style-lora"); err != nil {
		t.Fatalf("remove an adapter: %v", err)
	}
	if got := ids(cat.Adapters("base")); got != "" {
		t.Errorf("after remove: %q", got)
	}
}
