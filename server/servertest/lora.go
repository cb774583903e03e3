package servertest

import (
	"fmt"
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
