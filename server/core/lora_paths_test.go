package core_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestLoRARequestRefusalsNameNoFolders: a request naming a catalog adapter that no longer fits
// its model (the file replaced behind the catalog's back), or whose file is gone, is refused
// naming the adapter's id and the files' base names, never the folders they lie in, and so is
// the engine's refusal of a loaded adapter: any key may run with an adapter, and only admins
// are shown where the server keeps its files (GET /v1/lora, the models' load errors).
func TestLoRARequestRefusalsNameNoFolders(t *testing.T) {
	cat, dir := loraCatalog(t)
	ctx := t.Context()
	path := filepath.Join(dir, "tone.gguf")
	servertest.WriteLoRAHeader(t, path, "llama", 64, 2)
	if _, err := cat.Mgr.Catalog().Register(ctx, models.Record{ID: "tone-lora", Path: path, Source: models.SourceLocal,
		Kind: models.KindAdapter, BaseModel: "alpha"}); err != nil {
		t.Fatal(err)
	}
	alpha, err := cat.Mgr.Catalog().Lookup("alpha")
	if err != nil {
		t.Fatal(err)
	}
	modelDir := filepath.Dir(alpha.Path)
	servertest.WriteLoRAHeader(t, path, "llama", 128, 2) // another model's now
	for _, step := range []struct {
		name string
		say  []string
	}{
		{"replaced", []string{`lora[0]: the catalog adapter "tone-lora"`, "tone.gguf", filepath.Base(alpha.Path), "[128 128]"}},
		{"deleted", []string{`"tone-lora"`, "tone.gguf", "does not exist"}},
	} {
		if step.name == "deleted" {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}
		_, err := loraChat(t, cat, "alpha", []llm.AdapterRef{{ID: "tone-lora", Scale: 1}})
		if !errors.Is(err, llm.ErrInvalidInput) {
			t.Fatalf("%s: %v, want invalid input", step.name, err)
		}
		msg := err.Error()
		for _, w := range step.say {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: %q does not say %q", step.name, msg, w)
			}
		}
		if strings.Contains(msg, dir) || strings.Contains(msg, modelDir) {
			t.Errorf("%s: %q names a folder (%s or %s)", step.name, msg, dir, modelDir)
		}
	}

	loaded := filepath.Join(dir, "loaded.gguf")
	servertest.WriteLoRAHeader(t, loaded, "llama", 64, 2)
	if _, err := cat.Svc.LoadAdapter(ctx, "alpha", loaded, "", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := loraChat(t, cat, "alpha", nil); err != nil {
		t.Fatal(err)
	}
	cat.Runner(alpha.Path).Fail = fmt.Errorf("%w: adapter loaded (%s) does not fit the model %s: changed since", llm.ErrInvalidInput, loaded, alpha.Path)
	_, err = loraChat(t, cat, "alpha", nil)
	if !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), "(loaded.gguf) does not fit the model alpha.gguf") ||
		strings.Contains(err.Error(), dir) || strings.Contains(err.Error(), modelDir) {
		t.Errorf("the engine's refusal of a loaded adapter: %v; want it without folders", err)
	}
}
