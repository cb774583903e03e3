package models

import (
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

// The catalog reads only headers: these write the smallest projector and adapter GGUFs whose
// headers say what real ones do (the engine's tests load real ones from gguftest).

// writeProjector writes an mmproj header for a text model of width embd: a LLaVA-style mlp
// vision projector, or an ultravox audio one.
func writeProjector(t *testing.T, path string, embd int, audio bool) {
	t.Helper()
	w := gguftest.NewWriter()
	w.AddString("general.architecture", "clip")
	w.AddBool("clip.has_vision_encoder", !audio)
	w.AddBool("clip.has_audio_encoder", audio)
	out := "mm.2.weight"
	if audio {
		w.AddString("clip.projector_type", "ultravox")
		out = "mm.a.mlp.2.weight"
	} else {
		w.AddString("clip.projector_type", "mlp")
	}
	w.AddTensorF32(out, []uint64{8, uint64(embd)}, make([]float32, 8*embd))
	if err := w.WriteFile(path); err != nil {
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
