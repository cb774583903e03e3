package llamacpp

import (
	"fmt"

	"github.com/ollama/ollama/ml"

	"github.com/superfluid/superfluid/runtime/gguf"
)

// Flash attention is fixed when llama.cpp creates a context, for prefill and decode alike, and
// it shapes the KV cache (V is stored transposed without it), so one context cannot switch per
// phase, and two contexts would hold two KV caches and copy prefixes between their layouts on
// every turn: twice the KV memory for a few percent. The engine runs one setting per model and
// runtime instead, chosen by flashAttentionFor from what TestFlashAttentionSpeed measured on
// the CPU runtime (AMD EPYC, 2 cores shared with other work, medians, on/off):
//
//	TinyLlama-1.1B-shaped Q8_0 (head size 64, 2 threads): decode 1.035 (5 runs, 10.5 vs 10.1
//	tok/s, short context), prefill of 512 tokens 0.93 (3 runs), of 2,000 tokens not measured to the end;
//	stories260K (head size 8, 1 thread): decode 1.28, prefill of 512 tokens 0.22 (3 runs).
//
// So "auto" on the CPU is on for heads of 64 and more (decode gains, and more so as the
// context grows: the fused kernel reads the f16 KV once per token instead of materialising the
// attention matrix; it is also Ollama's CPU default), and off for smaller heads, where the
// fused kernel made prefill several times slower.

// Flash attention settings of Options.FlashAttention.
const (
	FlashOn   = "on"
	FlashOff  = "off"
	FlashAuto = "auto"
)

// flashMinHeadDim is the smallest attention head size "auto" runs flash attention for on the CPU.
const flashMinHeadDim = 64

// flashAttentionFor resolves setting ("on", "off", "auto" or "") for a context on the CPU
// (gpu false) or on a GPU runtime: the llama.cpp flag to create the context with and whether
// flash attention will run (ModelInfo.FlashAttention). headDim is the model's attention head
// size (0: unknown). An embedding model's "auto" is off, as before: encoders were not
// measured (and Ollama turns it off for them too).
//
// On a GPU runtime "auto" is on: every GPU backend llama.cpp ships runs the fused kernel on the
// device, and it is what llama.cpp's own auto picks there (a layer left on the CPU runs the
// CPU kernel).
func flashAttentionFor(setting string, gpu, embeds bool, headDim int) (ml.FlashAttentionType, bool, error) {
	switch setting {
	case FlashOn:
		return ml.FlashAttentionEnabled, true, nil
	case FlashOff:
		return ml.FlashAttentionDisabled, false, nil
	case FlashAuto, "":
		if !embeds && (gpu || headDim >= flashMinHeadDim) {
			return ml.FlashAttentionEnabled, true, nil
		}
		return ml.FlashAttentionDisabled, false, nil
	}
	return ml.FlashAttentionDisabled, false, fmt.Errorf("flash attention %q: use %s, %s or %s", setting, FlashOn, FlashOff, FlashAuto)
}

// headDimOf is the attention head size of the model at path: <arch>.attention.key_length, or
// the embedding length over the head count; 0 when the file says neither.
func headDimOf(path string) int {
	f, err := gguf.ReadFile(path)
	if err != nil {
		return 0
	}
	arch := f.Architecture()
	if n, ok := f.Uint(arch + ".attention.key_length"); ok {
		return int(n)
	}
	embd, ok1 := f.Uint(arch + ".embedding_length")
	heads, ok2 := f.Uint(arch + ".attention.head_count")
	if !ok1 || !ok2 || heads == 0 {
		return 0
	}
	return int(embd / heads)
}
