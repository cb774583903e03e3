package gguftest

import (
	"fmt"
	"math"
	"strings"

	"github.com/superfluid/superfluid/runtime/gguf"
)

// LoRAOptions shape a random LoRA adapter. Zero fields take the defaults noted.
type LoRAOptions struct {
	// Rank is the factors' inner dimension; default 4.
	Rank int
	// Alpha is adapter.lora.alpha; llama.cpp multiplies the delta by Alpha/Rank. Default Rank
	// (a factor of 1).
	Alpha float32
	// Seed makes the factors: they are a pure function of the options and the base's shapes.
	Seed int64
	// Scale is the standard deviation of the B factor's entries; default 0.1, which changes
	// the greedy output of stories260K and of a written tiny llama. A's entries have standard
	// deviation 1/√in, so a unit input gives a delta of about Scale·√Rank per output.
	Scale float32
	// Architecture overrides general.architecture (default the base's), for adapters that
	// must not load.
	Architecture string
}

func (o *LoRAOptions) defaults() error {
	if o.Rank == 0 {
		o.Rank = 4
	}
	if o.Alpha == 0 {
		o.Alpha = float32(o.Rank)
	}
	if o.Scale == 0 {
		o.Scale = 0.1
	}
	if o.Rank < 0 || math.IsNaN(float64(o.Alpha)) || math.IsNaN(float64(o.Scale)) {
		return fmt.Errorf("lora: bad options %+v", *o)
	}
	return nil
}

// WriteLoRA writes to path a random LoRA adapter (general.type "adapter", adapter.type "lora")
// for the model file basePath: a pair of factors for each of its attention and feed-forward
// weight matrices, named and shaped as llama.cpp's llama-adapter.cpp expects (name.lora_a
// [in, rank], name.lora_b [rank, out], ggml order), F32.
func WriteLoRA(path, basePath string, o LoRAOptions) error {
	base, err := gguf.ReadFile(basePath)
	if err != nil {
		return fmt.Errorf("write lora: %w", err)
	}
	w, err := newLoRA(base.Architecture(), base.Tensors, o)
	if err != nil {
		return fmt.Errorf("write lora for %s: %w", basePath, err)
	}
	return w.WriteFile(path)
}

// WriteTinyLlamaLoRA writes to path the adapter WriteLoRA would write for the tiny llama that
// base describes, without writing that model: an adapter for another model's shape (a wider
// embedding, say), which must not load onto the model under test.
func WriteTinyLlamaLoRA(path string, base TinyLlamaOptions, o LoRAOptions) error {
	model, err := NewTinyLlama(base)
	if err != nil {
		return err
	}
	infos := make([]gguf.TensorInfo, len(model.tensors))
	for i, t := range model.tensors {
		infos[i] = t.info
	}
	w, err := newLoRA("llama", infos, o)
	if err != nil {
		return fmt.Errorf("write lora: %w", err)
	}
	return w.WriteFile(path)
}

// newLoRA builds the adapter for a base of architecture arch with the tensors given.
func newLoRA(arch string, tensors []gguf.TensorInfo, opts LoRAOptions) (*Writer, error) {
	o := opts
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if o.Architecture != "" {
		arch = o.Architecture
	}
	w := NewWriter()
	w.AddString("general.architecture", arch)
	w.AddString("general.type", "adapter")
	w.AddString("general.name", "random-lora")
	w.AddString("adapter.type", "lora")
	w.AddFloat32("adapter.lora.alpha", o.Alpha)
	rank := uint64(o.Rank)
	seed := uint64(o.Seed) ^ loraSalt
	pairs := 0
	for i, t := range tensors {
		if !loraTarget(t) {
			continue
		}
		in, out := t.Dims[0], t.Dims[1]
		index := uint64(i) + 1
		w.AddTensorF32(t.Name+".lora_a", []uint64{in, rank},
			loraRandom(in*rank, float32(1/math.Sqrt(float64(in))), seed, 2*index))
		w.AddTensorF32(t.Name+".lora_b", []uint64{rank, out},
			loraRandom(rank*out, o.Scale, seed, 2*index+1))
		pairs++
	}
	if pairs == 0 {
		return nil, fmt.Errorf("the base has no attention or feed-forward weight matrices to adapt")
	}
	if w.err != nil {
		return nil, w.err
	}
	return w, nil
}

// loraTargets are the weight matrices of a transformer block an adapter changes (the usual
// q, k, v, o and MLP projections).
var loraTargets = []string{"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"}

func loraTarget(t gguf.TensorInfo) bool {
	if len(t.Dims) != 2 || !strings.HasPrefix(t.Name, "blk.") {
		return false
	}
	for _, name := range loraTargets {
		if strings.HasSuffix(t.Name, "."+name+".weight") {
			return true
		}
	}
	return false
}

// loraSalt keeps an adapter's random streams apart from those of a tiny llama of the same seed.
const loraSalt = 0x4c6f5241 // "LoRA"

// loraRandom returns n approximately normal values of standard deviation std.
func loraRandom(n uint64, std float32, seed, index uint64) []float32 {
	r := newRNG(seed, index, 0)
	out := make([]float32, n)
	for i := range out {
		out[i] = r.normal() * std
	}
	return out
}
