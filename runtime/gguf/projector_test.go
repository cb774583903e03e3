package gguf_test

import (
	"errors"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

// zeros adds an F32 tensor of zeros: the checks read shapes, never data.
func zeros(w *gguftest.Writer, name string, dims ...uint64) {
	n := uint64(1)
	for _, d := range dims {
		n *= d
	}
	w.AddTensorF32(name, dims, make([]float32, n))
}

// projector is the header of an mmproj file: the keys mtmd reads to pick its encoders and
// projector type, and the tensors named in tensors (name → ggml dims).
func projector(vision, audio bool, typ string, tensors map[string][]uint64) *gguftest.Writer {
	w := gguftest.NewWriter()
	w.AddString("general.architecture", "clip")
	w.AddBool("clip.has_vision_encoder", vision)
	w.AddBool("clip.has_audio_encoder", audio)
	if typ != "" {
		w.AddString("clip.projector_type", typ)
	}
	for name, dims := range tensors {
		zeros(w, name, dims...)
	}
	return w
}

func writeTo(t *testing.T, w *gguftest.Writer, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

func readWriter(t *testing.T, w *gguftest.Writer) *gguf.File {
	t.Helper()
	f, err := readBytes(writeBytes(t, w))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestProjectorFacts(t *testing.T) {
	deepstack := gguftest.NewWriter()
	deepstack.AddString("general.architecture", "clip")
	deepstack.AddBool("clip.has_vision_encoder", true)
	deepstack.AddString("clip.projector_type", "qwen3vl_merger")
	zeros(deepstack, "mm.2.bias", 48)
	zeros(deepstack, "v.deepstack.3.fc1.weight", 4, 4)
	zeros(deepstack, "v.deepstack.7.fc1.weight", 4, 4)
	mixed := gguftest.NewWriter() // one file, two encoders, each with its own type key
	mixed.AddString("general.architecture", "clip")
	mixed.AddBool("clip.has_vision_encoder", true)
	mixed.AddBool("clip.has_audio_encoder", true)
	mixed.AddString("clip.vision.projector_type", "gemma3")
	mixed.AddString("clip.audio.projector_type", "qwen2a")
	zeros(mixed, "mm.input_projection.weight", 96, 16)
	zeros(mixed, "mm.a.fc.weight", 16, 96)
	tests := []struct {
		name string
		w    *gguftest.Writer
		want gguf.ProjectorFacts
	}{
		{"llava mlp", projector(true, false, "mlp", map[string][]uint64{"mm.0.weight": {32, 16}, "mm.2.weight": {16, 64}}),
			gguf.ProjectorFacts{Vision: true, VisionType: "mlp", Width: 64}},
		{"no type means mlp", projector(true, false, "", map[string][]uint64{"mm.2.weight": {16, 80}}),
			gguf.ProjectorFacts{Vision: true, VisionType: "mlp", Width: 80}},
		{"yi-style mlp reads mm.3", projector(true, false, "mlp", map[string][]uint64{"mm.2.weight": {16, 80}, "mm.3.weight": {80, 128}, "mm.3.bias": {128}}),
			gguf.ProjectorFacts{Vision: true, VisionType: "mlp", Width: 128}},
		{"gemma3 reads ne[0]", projector(true, false, "gemma3", map[string][]uint64{"mm.input_projection.weight": {2560, 1152}}),
			gguf.ProjectorFacts{Vision: true, VisionType: "gemma3", Width: 2560}},
		{"ultravox audio", projector(false, true, "ultravox", map[string][]uint64{"mm.a.mlp.2.weight": {32, 64}}),
			gguf.ProjectorFacts{Audio: true, AudioType: "ultravox", Width: 64}},
		{"legacy omni audio", projector(false, true, "qwen2.5o", map[string][]uint64{"mm.a.fc.weight": {32, 72}}),
			gguf.ProjectorFacts{Audio: true, AudioType: "qwen2a", Width: 72}},
		{"qwen3-vl deepstack widens", deepstack, gguf.ProjectorFacts{Vision: true, VisionType: "qwen3vl_merger", Width: 144}},
		{"vision and audio", mixed, gguf.ProjectorFacts{Vision: true, Audio: true, VisionType: "gemma3", AudioType: "qwen2a", Width: 96}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := readWriter(t, tt.w)
			got, err := f.Projector()
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Projector() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestProjectorRefused(t *testing.T) {
	llama, err := gguftest.NewTinyLlama(gguftest.TinyLlamaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mixed := projector(true, true, "", map[string][]uint64{"mm.2.weight": {16, 64}, "mm.a.mlp.2.weight": {16, 32}})
	mixed.AddString("clip.audio.projector_type", "ultravox")
	// Sizes that crashed the worker as mtmd warmed the encoder up at load.
	sized := func(sizes map[string]uint32) *gguftest.Writer {
		w := projector(true, false, "mlp", map[string][]uint64{"mm.2.weight": {16, 64}})
		for k, v := range sizes {
			w.AddUint32("clip.vision."+k, v)
		}
		return w
	}
	good := map[string]uint32{"embedding_length": 32, "attention.head_count": 4, "patch_size": 8, "image_size": 32}
	with := func(k string, v uint32) map[string]uint32 {
		m := maps.Clone(good)
		m[k] = v
		return m
	}
	if _, err := readWriter(t, sized(good)).Projector(); err != nil {
		t.Fatalf("sane sizes: %v", err)
	}
	tests := []struct {
		name, want string
		w          *gguftest.Writer
	}{
		{"a text model", `general.architecture is "llama", not "clip"`, llama},
		{"zero patch", "vision encoder: clip.vision.patch_size is 0", sized(with("patch_size", 0))},
		{"zero image", "clip.vision.image_size 0 is smaller than a patch (8)", sized(with("image_size", 0))},
		{"image under a patch", "clip.vision.image_size 7 is smaller than a patch (8)", sized(with("image_size", 7))},
		{"zero heads", "clip.vision.attention.head_count is 0", sized(with("attention.head_count", 0))},
		{"heads that do not divide", "clip.vision.embedding_length 32 is not a multiple of its 3 attention heads", sized(with("attention.head_count", 3))},
		{"zero width", "clip.vision.embedding_length is 0", sized(with("embedding_length", 0))},
		{"no encoder", "neither clip.has_vision_encoder nor clip.has_audio_encoder", projector(false, false, "mlp", nil)},
		{"unknown type", `projector type "telepathy" is not one the engine knows`, projector(true, false, "telepathy", map[string][]uint64{"mm.2.weight": {16, 64}})},
		{"output tensor missing", "needs the tensor mm.2.weight, which it lacks", projector(true, false, "mlp", map[string][]uint64{"mm.0.weight": {16, 64}})},
		{"audio without a type", `projector type "" is not one the engine knows`, projector(false, true, "", map[string][]uint64{"mm.a.mlp.2.weight": {16, 64}})},
		{"encoders disagree", "vision encoder gives 64-wide embeddings and its audio encoder 32", mixed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readWriter(t, tt.w).Projector()
			wantErr(t, err, gguf.ErrNotProjector, tt.want)
		})
	}
}

func TestInputWidth(t *testing.T) {
	w := gguftest.NewWriter()
	w.AddString("general.architecture", "qwen3vl")
	w.AddUint32("qwen3vl.embedding_length", 64)
	w.AddUint32("qwen3vl.n_deepstack_layers", 3)
	if got := readWriter(t, w).InputWidth(); got != 256 {
		t.Errorf("InputWidth with 3 deepstack layers = %d, want 256", got)
	}
	plain := gguftest.NewWriter()
	plain.AddString("general.architecture", "llama")
	if got := readWriter(t, plain).InputWidth(); got != 0 {
		t.Errorf("InputWidth without embedding_length = %d, want 0", got)
	}
}

func TestCheckProjector(t *testing.T) {
	model := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := gguftest.WriteTinyLlama(model, gguftest.TinyLlamaOptions{Embd: 64}); err != nil {
		t.Fatal(err)
	}
	fits := writeTo(t, projector(true, false, "mlp", map[string][]uint64{"mm.0.weight": {32, 16}, "mm.2.weight": {16, 64}}), "mmproj-fits.gguf")
	wide := writeTo(t, projector(true, false, "mlp", map[string][]uint64{"mm.0.weight": {32, 16}, "mm.2.weight": {16, 4096}}), "mmproj-other.gguf")
	if err := gguf.CheckProjector(model, fits); err != nil {
		t.Fatalf("a projector of the model's width: %v", err)
	}
	err := gguf.CheckProjector(model, wide)
	wantErr(t, err, gguf.ErrMismatch, "gives 4096-wide embeddings but the model (llama) takes 64-wide ones")
	for _, name := range []string{model, wide} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("the error does not name %s: %v", name, err)
		}
	}
	// Swapped arguments: the text model is no projector, and the projector no text model.
	err = gguf.CheckProjector(fits, model)
	wantErr(t, err, gguf.ErrMismatch, "the model is itself a projector")
	if err := gguf.CheckProjector(model, filepath.Join(t.TempDir(), "gone.gguf")); err == nil || errors.Is(err, gguf.ErrMismatch) {
		t.Errorf("a missing projector: %v", err)
	}
}
