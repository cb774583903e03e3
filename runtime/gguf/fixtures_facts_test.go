package gguf_test

import (
	"path/filepath"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

// TestFactsOfTheTestProjectors: the projectors mtmd loads in the engine's tests (gguftest's)
// read as what they are, and fit exactly the text models of their width.
func TestFactsOfTheTestProjectors(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "tiny.gguf")
	if err := gguftest.WriteTinyLlama(model, gguftest.TinyLlamaOptions{Embd: 64}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		write func(path string, embd int) error
		want  gguf.ProjectorFacts
	}{
		{"vision", func(p string, embd int) error {
			return gguftest.WriteVisionProjector(p, gguftest.VisionProjectorOptions{TextEmbd: embd})
		}, gguf.ProjectorFacts{Vision: true, VisionType: "mlp", Width: 64}},
		{"audio", func(p string, embd int) error {
			return gguftest.WriteAudioProjector(p, gguftest.AudioProjectorOptions{TextEmbd: embd})
		}, gguf.ProjectorFacts{Audio: true, AudioType: "voxtral", Width: 64}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fits, wide := filepath.Join(dir, tt.name+"-64.gguf"), filepath.Join(dir, tt.name+"-128.gguf")
			if err := tt.write(fits, 64); err != nil {
				t.Fatal(err)
			}
			if err := tt.write(wide, 128); err != nil {
				t.Fatal(err)
			}
			f, err := gguf.ReadFile(fits)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := f.Projector(); err != nil || got != tt.want {
				t.Errorf("Projector() = %+v, %v; want %+v", got, err, tt.want)
			}
			if err := gguf.CheckProjector(model, fits); err != nil {
				t.Errorf("the 64-wide projector beside the 64-wide model: %v", err)
			}
			wantErr(t, gguf.CheckProjector(model, wide), gguf.ErrMismatch, "gives 128-wide embeddings but the model (llama) takes 64-wide ones")
		})
	}
}

// TestFitOfTheTestAdapters: a LoRA gguftest writes for a model fits it, and one written for a
// model of another width is refused naming a tensor, as llama.cpp refuses it.
func TestFitOfTheTestAdapters(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "tiny.gguf")
	if err := gguftest.WriteTinyLlama(model, gguftest.TinyLlamaOptions{Embd: 64}); err != nil {
		t.Fatal(err)
	}
	own, other := filepath.Join(dir, "own.gguf"), filepath.Join(dir, "other.gguf")
	if err := gguftest.WriteLoRA(own, model, gguftest.LoRAOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := gguftest.WriteTinyLlamaLoRA(other, gguftest.TinyLlamaOptions{Embd: 128}, gguftest.LoRAOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := gguf.CheckAdapter(model, own); err != nil {
		t.Errorf("the adapter written for the model: %v", err)
	}
	wantErr(t, gguf.CheckAdapter(model, other), gguf.ErrMismatch, "but the adapter's factors are for [128")
}
