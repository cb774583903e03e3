package gguf

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// A LoRA adapter GGUF holds, for some of a base model's weight matrices W, two low-rank
// factors A (name.lora_a) and B (name.lora_b) whose product llama.cpp adds to W. It loads only
// onto a model of the same architecture whose tensors have the shapes the factors assume; this
// file checks what llama-adapter.cpp checks, from the headers.

// ErrNotAdapter means a file is not a LoRA adapter (general.type is not "adapter", or
// adapter.type is not "lora", or its tensors are not LoRA pairs).
var ErrNotAdapter = errors.New("not a LoRA adapter GGUF")

// AdapterFacts is what an adapter's header says.
type AdapterFacts struct {
	// Architecture is the base model's architecture (general.architecture).
	Architecture string
	// Alpha is adapter.lora.alpha (0 when absent: llama.cpp then scales by 1).
	Alpha float64
	// Rank is the factors' inner dimension (of the first pair); Tensors the number of base
	// tensors it changes.
	Rank, Tensors int
}

// IsAdapter reports whether the file is an adapter: general.type "adapter".
func (f *File) IsAdapter() bool {
	t, _ := f.String("general.type")
	return t == "adapter"
}

// loraPair is one adapted base tensor's factors.
type loraPair struct{ a, b *TensorInfo }

// loraPairs groups the adapter's tensors by the base tensor they adapt; norm vectors, which
// llama.cpp ignores, are skipped.
func (f *File) loraPairs() (map[string]*loraPair, error) {
	pairs := map[string]*loraPair{}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		base, isA := strings.CutSuffix(t.Name, ".lora_a")
		base, isB := strings.CutSuffix(base, ".lora_b")
		switch {
		case isA || isB:
		case strings.HasSuffix(t.Name, "_norm.weight"):
			continue
		default:
			return nil, fmt.Errorf("tensor %s is neither a .lora_a nor a .lora_b factor: %w", t.Name, ErrNotAdapter)
		}
		p := pairs[base]
		if p == nil {
			p = &loraPair{}
			pairs[base] = p
		}
		if isA {
			p.a = t
		} else {
			p.b = t
		}
	}
	for base, p := range pairs {
		if p.a == nil || p.b == nil {
			return nil, fmt.Errorf("tensor %s has only one of its two LoRA factors: %w", base, ErrNotAdapter)
		}
		if !isMatrix(p.a.Dims) || !isMatrix(p.b.Dims) {
			// llama.cpp checks the first two dimensions only; a third one aborts the product.
			return nil, fmt.Errorf("the LoRA factors of %s are %v and %v, not matrices: %w", base, p.a.Dims, p.b.Dims, ErrNotAdapter)
		}
		for _, t := range []*TensorInfo{p.a, p.b} {
			if !loraFactorTypes[t.Type] {
				return nil, fmt.Errorf("the LoRA factor %s is of type %s, which llama.cpp cannot multiply (an adapter's factors are F32, F16, BF16 or a Q4–Q8 quantization): %w",
					t.Name, TypeName(t.Type), ErrNotAdapter)
			}
		}
	}
	return pairs, nil
}

// isMatrix reports whether dims has two dimensions (and any after them are 1).
func isMatrix(dims []uint64) bool {
	if len(dims) < 2 {
		return false
	}
	for _, d := range dims[2:] {
		if d != 1 {
			return false
		}
	}
	return true
}

// loraFactorTypes are the tensor types a LoRA factor may have: those ggml multiplies as the
// first operand of a matrix product (llama.cpp's converter writes F32, F16, BF16 or Q8_0).
// Integer, F64 and the Q8_1/Q8_K activation types have no such kernel, and the worker
// crashes on the first decode with them.
var loraFactorTypes = map[uint32]bool{
	TypeF32: true, TypeF16: true, TypeBF16: true,
	TypeQ4_0: true, TypeQ4_1: true, TypeQ5_0: true, TypeQ5_1: true, TypeQ8_0: true,
	TypeQ2_K: true, TypeQ3_K: true, TypeQ4_K: true, TypeQ5_K: true, TypeQ6_K: true,
}

// Adapter reads the adapter's facts; an error says why llama.cpp would refuse it whatever the
// base model.
func (f *File) Adapter() (AdapterFacts, error) {
	if !f.IsAdapter() {
		t, _ := f.String("general.type")
		if t == "" {
			t = "model"
		}
		return AdapterFacts{}, fmt.Errorf("general.type is %q, not \"adapter\": %w", t, ErrNotAdapter)
	}
	if t, _ := f.String("adapter.type"); t != "lora" {
		return AdapterFacts{}, fmt.Errorf("adapter.type is %q; only \"lora\" adapters load: %w", t, ErrNotAdapter)
	}
	facts := AdapterFacts{Architecture: f.Architecture()}
	if facts.Architecture == "" {
		return AdapterFacts{}, fmt.Errorf("it has no general.architecture to match a base model by: %w", ErrNotAdapter)
	}
	facts.Alpha, _ = f.Float("adapter.lora.alpha")
	if math.IsNaN(facts.Alpha) || math.IsInf(facts.Alpha, 0) {
		// llama.cpp scales the delta by alpha/rank: every logit would be NaN.
		return AdapterFacts{}, fmt.Errorf("adapter.lora.alpha is %v, not a finite number: %w", facts.Alpha, ErrNotAdapter)
	}
	pairs, err := f.loraPairs()
	if err != nil {
		return AdapterFacts{}, err
	}
	if len(pairs) == 0 {
		return AdapterFacts{}, fmt.Errorf("it has no LoRA tensors: %w", ErrNotAdapter)
	}
	names := make([]string, 0, len(pairs))
	for n := range pairs {
		names = append(names, n)
	}
	slices.Sort(names)
	facts.Tensors = len(pairs)
	facts.Rank = int(pairs[names[0]].a.Dims[1])
	return facts, nil
}

// FitAdapter says why the adapter does not fit the model whose parts are model (every part of
// a split model, in order), nil when it does: same architecture, and every adapted tensor
// present in the model with the shape the factors assume (llama-adapter.cpp's checks).
func FitAdapter(model []*File, adapter *File) error {
	if len(model) == 0 {
		return mismatch("no model given")
	}
	facts, err := adapter.Adapter()
	if err != nil {
		return err
	}
	if model[0].IsAdapter() {
		return mismatch("the model is itself an adapter; pass its base model")
	}
	if arch := model[0].Architecture(); arch != facts.Architecture {
		return mismatch("the adapter is for %s models but the model is %s", facts.Architecture, arch)
	}
	pairs, err := adapter.loraPairs()
	if err != nil {
		return err
	}
	names := make([]string, 0, len(pairs))
	for n := range pairs {
		names = append(names, n)
	}
	slices.Sort(names) // the first mismatch named is the same every time
	for _, name := range names {
		p := pairs[name]
		w, ok := findTensor(model, name)
		if !ok {
			return mismatch("the adapter changes the tensor %s, which the model lacks", name)
		}
		if len(w.Dims) < 2 {
			return mismatch("the model's tensor %s is not a matrix", name)
		}
		a, b := p.a.Dims, p.b.Dims
		if strings.HasSuffix(name, "token_embd.weight") {
			// Embeddings are looked up, not multiplied: the factors come flipped.
			if w.Dims[0] != b[1] || w.Dims[1] != a[1] {
				return mismatch("the model's %s is %v but the adapter's factors are for %v",
					name, w.Dims[:2], []uint64{b[1], a[1]})
			}
			continue
		}
		if w.Dims[0] != a[0] || w.Dims[1] != b[1] {
			return mismatch("the model's %s is %v but the adapter's factors are for %v",
				name, w.Dims[:2], []uint64{a[0], b[1]})
		}
		if a[1] != b[0] {
			return fmt.Errorf("the factors of %s have ranks %d and %d (lora_a must be stored transposed): %w",
				name, a[1], b[0], ErrNotAdapter)
		}
	}
	return nil
}

func findTensor(parts []*File, name string) (TensorInfo, bool) {
	for _, f := range parts {
		if t, ok := f.Tensor(name); ok {
			return t, true
		}
	}
	return TensorInfo{}, false
}

// CheckAdapter reads the base model at modelPath (every part, when split) and the adapter at
// adapterPath and says why llama.cpp would refuse to apply one to the other, naming both
// files; nil when it would not.
func CheckAdapter(modelPath, adapterPath string) error {
	model, err := ReadParts(modelPath)
	if err != nil {
		return fmt.Errorf("the base model of the adapter %s: %w", adapterPath, err)
	}
	adapter, err := ReadFile(adapterPath)
	if err != nil {
		return fmt.Errorf("the adapter for the model %s: %w", modelPath, err)
	}
	err = FitAdapter(model, adapter)
	switch {
	case errors.Is(err, ErrNotAdapter):
		return fmt.Errorf("%s cannot be an adapter of the model %s: %w", adapterPath, modelPath, err)
	case err != nil:
		return fmt.Errorf("the adapter %s does not fit the model %s: %w", adapterPath, modelPath, err)
	}
	return nil
}
