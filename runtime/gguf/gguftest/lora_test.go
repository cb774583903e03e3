package gguftest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf"
)

// tensorStd is the standard deviation of an F32 tensor's values in the file's bytes.
func tensorStd(t *testing.T, file []byte, f *gguf.File, name string) float64 {
	t.Helper()
	ti, ok := f.Tensor(name)
	if !ok || ti.Type != gguf.TypeF32 {
		t.Fatalf("no F32 tensor %s", name)
	}
	data := file[f.DataOffset+int64(ti.Offset):][:ti.Size]
	var sum, sq float64
	n := float64(len(data) / 4)
	for i := 0; i+4 <= len(data); i += 4 {
		x := float64(math.Float32frombits(binary.LittleEndian.Uint32(data[i:])))
		sum += x
		sq += x * x
	}
	mean := sum / n
	return math.Sqrt(sq/n - mean*mean)
}

func TestWriteLoRA(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.gguf")
	shape := TinyLlamaOptions{Embd: 64, FF: 96, Heads: 4, KVHeads: 2, Layers: 3}
	if err := WriteTinyLlama(base, shape); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name        string
		opts        LoRAOptions
		rank        uint64
		alpha, std  float64
		arch        string
		sameAsFirst bool
	}{
		{"defaults", LoRAOptions{}, 4, 4, 0.1, "llama", true},
		{"shaped", LoRAOptions{Rank: 8, Alpha: 16, Scale: 0.5, Seed: 3, Architecture: "qwen2"}, 8, 16, 0.5, "qwen2", false},
	}
	var first []byte
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("lora%d.gguf", i))
			if err := WriteLoRA(path, base, c.opts); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first = raw
			}
			f, err := readBytes(raw)
			if err != nil {
				t.Fatal(err)
			}
			typ, _ := f.String("general.type")
			adapter, _ := f.String("adapter.type")
			alpha, _ := f.Float("adapter.lora.alpha")
			if typ != "adapter" || adapter != "lora" || alpha != c.alpha || f.Architecture() != c.arch {
				t.Errorf("general.type %q, adapter.type %q, alpha %v, architecture %q", typ, adapter, alpha, f.Architecture())
			}
			// Every attention and feed-forward matrix of every block, with the factors
			// llama-adapter.cpp checks: a [in, rank], b [rank, out].
			want := map[string][]uint64{}
			for l := range shape.Layers {
				for name, dims := range map[string][2]uint64{
					"attn_q": {64, 64}, "attn_k": {64, 32}, "attn_v": {64, 32}, "attn_output": {64, 64},
					"ffn_gate": {64, 96}, "ffn_up": {64, 96}, "ffn_down": {96, 64},
				} {
					p := fmt.Sprintf("blk.%d.%s.weight", l, name)
					want[p+".lora_a"] = []uint64{dims[0], c.rank}
					want[p+".lora_b"] = []uint64{c.rank, dims[1]}
				}
			}
			if len(f.Tensors) != len(want) {
				t.Errorf("%d tensors, want %d", len(f.Tensors), len(want))
			}
			for name, dims := range want {
				ti, ok := f.Tensor(name)
				if !ok || !reflect.DeepEqual(ti.Dims, dims) || ti.Type != gguf.TypeF32 {
					t.Errorf("tensor %s: %v %s, want F32 %v", name, ti.Dims, gguf.TypeName(ti.Type), dims)
				}
			}
			if got := tensorStd(t, raw, f, "blk.1.ffn_down.weight.lora_b"); math.Abs(got-c.std) > 0.25*c.std {
				t.Errorf("B's standard deviation %.3f, want about %.3f", got, c.std)
			}
			if got, want := tensorStd(t, raw, f, "blk.1.ffn_down.weight.lora_a"), 1/math.Sqrt(96); math.Abs(got-want) > 0.25*want {
				t.Errorf("A's standard deviation %.3f, want about 1/√in = %.3f", got, want)
			}
		})
	}
	again := filepath.Join(dir, "again.gguf")
	if err := WriteLoRA(again, base, LoRAOptions{}); err != nil {
		t.Fatal(err)
	}
	if raw, _ := os.ReadFile(again); !bytes.Equal(raw, first) {
		t.Error("the same options wrote a different adapter")
	}
	other := filepath.Join(dir, "other.gguf")
	if err := WriteLoRA(other, base, LoRAOptions{Seed: 1}); err != nil {
		t.Fatal(err)
	}
	if raw, _ := os.ReadFile(other); bytes.Equal(raw, first) {
		t.Error("another seed wrote the same adapter")
	}
}

func TestWriteTinyLlamaLoRA(t *testing.T) {
	// An adapter for a 128-wide llama, with no model written: its factors are for 128 inputs.
	path := filepath.Join(t.TempDir(), "wide.gguf")
	if err := WriteTinyLlamaLoRA(path, TinyLlamaOptions{Embd: 128, Layers: 1}, LoRAOptions{Rank: 2}); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := f.Tensor("blk.0.attn_q.weight.lora_a"); !reflect.DeepEqual(a.Dims, []uint64{128, 2}) {
		t.Errorf("attn_q lora_a dims %v, want [128 2]", a.Dims)
	}
	if b, _ := f.Tensor("blk.0.ffn_gate.weight.lora_b"); !reflect.DeepEqual(b.Dims, []uint64{2, 128}) {
		t.Errorf("ffn_gate lora_b dims %v, want [2 128] (the default feed-forward length)", b.Dims)
	}
	if f.Architecture() != "llama" || len(f.Tensors) != 14 {
		t.Errorf("architecture %q, %d tensors; want llama, 14", f.Architecture(), len(f.Tensors))
	}
}

func TestWriteLoRARefuses(t *testing.T) {
	dir := t.TempDir()
	// A base with no block weights to adapt (a LoRA of a LoRA).
	base := filepath.Join(dir, "base.gguf")
	if err := WriteTinyLlamaLoRA(base, TinyLlamaOptions{}, LoRAOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteLoRA(filepath.Join(dir, "x.gguf"), base, LoRAOptions{}); err == nil {
		t.Error("an adapter of an adapter was written")
	}
	if err := WriteLoRA(filepath.Join(dir, "y.gguf"), filepath.Join(dir, "missing.gguf"), LoRAOptions{}); err == nil {
		t.Error("an adapter of a missing model was written")
	}
}
