package models

import (
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

// The catalog reads only headers; the projectors are gguftest's real ones, the adapter the
// smallest GGUF whose header says what a real one does.

// writeProjector writes a projector mtmd loads for a text model of width embd: gguftest's
// vision one (CLIP + LLaVA mlp) or its audio one (Whisper + Voxtral).
func writeProjector(t *testing.T, path string, embd int, audio bool) {
	t.Helper()
	var err error
	if audio {
		err = gguftest.WriteAudioProjector(path, gguftest.AudioProjectorOptions{TextEmbd: embd})
	} else {
		err = gguftest.WriteVisionProjector(path, gguftest.VisionProjectorOptions{TextEmbd: embd})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// writeAdapter writes a rank-4 LoRA adapter of a llama's blk.0.attn_q.weight, for a model of
// width embd.
func writeAdapter(t *testing.T, path string, embd int) {
	t.Helper()
	w := gguftest.NewWriter()
	w.AddString("general.architecture", "llama")
	w.AddString("general.type", "adapter")
	w.AddString("adapter.type", "lora")
	w.AddFloat32("adapter.lora.alpha", 8)
	n := uint64(embd)
	w.AddTensorF32("blk.0.attn_q.weight.lora_a", []uint64{n, 4}, make([]float32, 4*embd))
	w.AddTensorF32("blk.0.attn_q.weight.lora_b", []uint64{4, n}, make([]float32, 4*embd))
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
}

// writeWidth writes a tiny llama of width embd.
func writeWidth(t *testing.T, path string, embd int, seed int64) {
	t.Helper()
	if err := gguftest.WriteTinyLlama(path, gguftest.TinyLlamaOptions{Embd: embd, Seed: seed}); err != nil {
		t.Fatal(err)
	}
}
