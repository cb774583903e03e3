package servertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

// WriteLoRAHeader writes a LoRA adapter GGUF with the header and tensor directory llama.cpp
// reads, for a tiny llama (gguftest.TinyLlamaOptions) of embedding width embd and layers
// blocks: a rank-2 pair for each block's attn_q. Its weights are zeros: it is for the checks
// the core makes before an engine sees an adapter, not for changing a model's output (the
// engine's tests write real ones).
func WriteLoRAHeader(t testing.TB, path, arch string, embd, layers int) {
	t.Helper()
	const rank = 2
	w := gguftest.NewWriter()
	w.AddString("general.architecture", arch)
	w.AddString("general.type", "adapter")
	w.AddString("adapter.type", "lora")
	w.AddFloat32("adapter.lora.alpha", rank)
	for i := range layers {
		name := fmt.Sprintf("blk.%d.attn_q.weight", i)
		w.AddTensorF32(name+".lora_a", []uint64{uint64(embd), rank}, make([]float32, embd*rank))
		w.AddTensorF32(name+".lora_b", []uint64{rank, uint64(embd)}, make([]float32, embd*rank))
	}
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
}

// LoRAFiles are a tiny llama model file and header-only LoRA adapters for it, for the dialect
// tests of the per-request lora extension: serve a model whose Path is Model, then Load the
// adapters, so that requests naming them reach the engine with their paths filled in.
type LoRAFiles struct {
	Model    string
	Adapters map[string]string // id → file
}

// WriteLoRAFiles writes the model and one adapter per id into a temporary folder.
func WriteLoRAFiles(t testing.TB, ids ...string) LoRAFiles {
	t.Helper()
	dir := t.TempDir()
	f := LoRAFiles{Model: filepath.Join(dir, "model.gguf"), Adapters: map[string]string{}}
	if err := gguftest.WriteTinyLlama(f.Model, gguftest.TinyLlamaOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		f.Adapters[id] = filepath.Join(dir, id+".gguf")
		WriteLoRAHeader(t, f.Adapters[id], "llama", 64, 2)
	}
	return f
}

// Load loads every adapter for model through POST /v1/lora/load on the server at base, at
// scale 0: loaded (requests may name them) but left out of the requests that name none.
func (f LoRAFiles) Load(t testing.TB, base, model string) {
	t.Helper()
	for id, path := range f.Adapters {
		body, _ := json.Marshal(map[string]any{"model": model, "adapter": path, "id": id, "scale": 0})
		resp, err := http.Post(base+"/v1/lora/load", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("load the adapter %s: %d %s", id, resp.StatusCode, b)
		}
	}
}
