package gguf_test

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

// lora is the header of a LoRA adapter for arch: factors name → {a dims, b dims}.
func lora(arch string, factors map[string][2][]uint64) *gguftest.Writer {
	w := gguftest.NewWriter()
	w.AddString("general.architecture", arch)
	w.AddString("general.type", "adapter")
	w.AddString("adapter.type", "lora")
	w.AddFloat32("adapter.lora.alpha", 16)
	for name, f := range factors {
		zeros(w, name+".lora_a", f[0]...)
		zeros(w, name+".lora_b", f[1]...)
	}
	return w
}

// qv64 adapts a 64-wide llama's attn_q and token_embd (vocab 512) at rank 4.
var qv64 = map[string][2][]uint64{
	"blk.0.attn_q.weight": {{64, 4}, {4, 64}},
	"token_embd.weight":   {{4, 512}, {4, 64}},
}

func tinyModel(t *testing.T, embd int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "base.gguf")
	if err := gguftest.WriteTinyLlama(path, gguftest.TinyLlamaOptions{Embd: embd}); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestAdapterFacts(t *testing.T) {
	f := readWriter(t, lora("llama", qv64))
	if !f.IsAdapter() || f.IsProjector() {
		t.Fatalf("IsAdapter = %v, IsProjector = %v", f.IsAdapter(), f.IsProjector())
	}
	got, err := f.Adapter()
	if err != nil {
		t.Fatal(err)
	}
	if want := (gguf.AdapterFacts{Architecture: "llama", Alpha: 16, Rank: 4, Tensors: 2}); got != want {
		t.Errorf("Adapter() = %+v, want %+v", got, want)
	}
}

func TestAdapterRefused(t *testing.T) {
	control := gguftest.NewWriter()
	control.AddString("general.architecture", "llama")
	control.AddString("general.type", "adapter")
	control.AddString("adapter.type", "control_vector")
	oddTensor := lora("llama", qv64)
	zeros(oddTensor, "blk.0.attn_q.weight.scale", 4)
	half := gguftest.NewWriter()
	half.AddString("general.architecture", "llama")
	half.AddString("general.type", "adapter")
	half.AddString("adapter.type", "lora")
	zeros(half, "blk.0.attn_q.weight.lora_a", 64, 4)
	model, err := gguftest.NewTinyLlama(gguftest.TinyLlamaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Factors llama.cpp loads but cannot multiply: the worker crashed on the first decode.
	typed := func(typ uint32) *gguftest.Writer {
		w := lora("llama", nil)
		for _, f := range []struct {
			name string
			dims []uint64
		}{{"blk.0.attn_q.weight.lora_a", []uint64{64, 32}}, {"blk.0.attn_q.weight.lora_b", []uint64{32, 64}}} {
			size, err := gguf.TensorBytes(typ, f.dims)
			if err != nil {
				t.Fatal(err)
			}
			w.AddTensor(f.name, typ, f.dims, make([]byte, size))
		}
		return w
	}
	deep := lora("llama", map[string][2][]uint64{"blk.0.attn_q.weight": {{64, 4, 2}, {4, 64}}})
	nanAlpha := gguftest.NewWriter()
	nanAlpha.AddString("general.architecture", "llama")
	nanAlpha.AddString("general.type", "adapter")
	nanAlpha.AddString("adapter.type", "lora")
	nanAlpha.AddFloat32("adapter.lora.alpha", float32(math.NaN()))
	zeros(nanAlpha, "blk.0.attn_q.weight.lora_a", 64, 4)
	zeros(nanAlpha, "blk.0.attn_q.weight.lora_b", 4, 64)
	tests := []struct {
		name, want string
		w          *gguftest.Writer
	}{
		{"a model", `general.type is "model", not "adapter"`, model},
		{"a control vector", `adapter.type is "control_vector"`, control},
		{"a tensor that is no factor", "blk.0.attn_q.weight.scale is neither a .lora_a nor a .lora_b factor", oddTensor},
		{"half a pair", "blk.0.attn_q.weight has only one of its two LoRA factors", half},
		{"integer factors", "the LoRA factor blk.0.attn_q.weight.lora_a is of type I32, which llama.cpp cannot multiply", typed(gguf.TypeI32)},
		{"F64 factors", "is of type F64", typed(gguf.TypeF64)},
		{"Q8_1 factors", "is of type Q8_1", typed(gguf.TypeQ8_1)},
		{"three-dimensional factors", "the LoRA factors of blk.0.attn_q.weight are [64 4 2] and [4 64], not matrices", deep},
		{"NaN alpha", "adapter.lora.alpha is NaN", nanAlpha},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readWriter(t, tt.w).Adapter()
			wantErr(t, err, gguf.ErrNotAdapter, tt.want)
		})
	}
}

func TestCheckAdapter(t *testing.T) {
	base := tinyModel(t, 64)
	other := tinyModel(t, 128)
	good := writeTo(t, lora("llama", qv64), "lora.gguf")
	if err := gguf.CheckAdapter(base, good); err != nil {
		t.Fatalf("an adapter made for the model: %v", err)
	}
	tests := []struct {
		name, model, want string
		adapter           *gguftest.Writer
		sentinel          error
	}{
		{"another width", other, "the model's blk.0.attn_q.weight is [128 128] but the adapter's factors are for [64 64]", lora("llama", qv64), gguf.ErrMismatch},
		{"another architecture", base, "the adapter is for qwen2 models but the model is llama", lora("qwen2", qv64), gguf.ErrMismatch},
		{"a tensor the model lacks", base, "changes the tensor blk.9.attn_q.weight, which the model lacks",
			lora("llama", map[string][2][]uint64{"blk.9.attn_q.weight": {{64, 4}, {4, 64}}}), gguf.ErrMismatch},
		{"embeddings not flipped", base, "the model's token_embd.weight is [64 512] but the adapter's factors are for [64 4]",
			lora("llama", map[string][2][]uint64{"token_embd.weight": {{64, 4}, {4, 64}}}), gguf.ErrMismatch},
		{"lora_a not transposed", base, "the factors of blk.0.attn_q.weight have ranks 8 and 4",
			lora("llama", map[string][2][]uint64{"blk.0.attn_q.weight": {{64, 8}, {4, 64}}}), gguf.ErrNotAdapter},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTo(t, tt.adapter, "adapter.gguf")
			err := gguf.CheckAdapter(tt.model, path)
			wantErr(t, err, tt.sentinel, tt.want)
			for _, name := range []string{tt.model, path} {
				if !strings.Contains(err.Error(), name) {
					t.Errorf("the error does not name %s: %v", name, err)
				}
			}
		})
	}
	// The adapter given as the model: refused, saying so.
	wantErr(t, gguf.CheckAdapter(good, good), gguf.ErrMismatch, "the model is itself an adapter")
}

func TestCheckAdapterSplitModel(t *testing.T) {
	// A split base model: the adapted tensor lives in the second part.
	dir := t.TempDir()
	first := gguftest.NewWriter()
	first.AddString("general.architecture", "llama")
	first.AddUint16("split.count", 2)
	zeros(first, "token_embd.weight", 64, 512)
	second := gguftest.NewWriter()
	second.AddString("general.architecture", "llama")
	zeros(second, "blk.0.attn_q.weight", 64, 64)
	p1 := filepath.Join(dir, "m-00001-of-00002.gguf")
	if err := first.WriteFile(p1); err != nil {
		t.Fatal(err)
	}
	if err := second.WriteFile(filepath.Join(dir, "m-00002-of-00002.gguf")); err != nil {
		t.Fatal(err)
	}
	if err := gguf.CheckAdapter(p1, writeTo(t, lora("llama", qv64), "lora.gguf")); err != nil {
		t.Fatalf("adapter over a split model: %v", err)
	}
}
