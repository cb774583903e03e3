package llamacpp

import (
	"fmt"

	"github.com/ollama/ollama/ml"
)

// Flash attention is fixed when llama.cpp creates a context, for prefill and decode alike, and
// it shapes the KV cache (V is stored transposed without it), so one context cannot switch per
// phase, and two contexts would hold two KV caches and copy prefixes between their layouts on
// every turn: twice the KV memory for a few percent. The engine runs one setting per model and
// runtime instead, chosen by flashAttentionFor from what TestFlashAttentionSpeed measured on
// the CPU runtime (AMD EPYC, 2 cores shared with other work, medians, on/off):
//
//	TinyLlama-1.1B-shaped Q8_0 (head size 64, 2 threads): decode 1.035 (5 runs, 10.5 vs 10.1
//	tok/s, short context), prefill of 512 tokens 0.93 (3 runs), of 2,000 tokens 0.56 (2 runs);
//	stories260K (head size 8, 1 thread): decode 1.28, prefill of 512 tokens 0.22 (3 runs).
//
// So "auto" is off on the CPU: the decode gain is within the noise at short contexts, while a
// 2,000-token prefill ran at 0.56x with flash attention (the min-max ranges apart: 29.8-35.1
// off, 19.5-19.8 on). Ollama turns it on for CPU, which is what the issue measured as its
// faster single-stream decode; superfluid keeps the long prefill. "on" is there for a model
// whose decode it does speed (longer contexts; the speed suite's row (d) measures a model).

// Flash attention settings of Options.FlashAttention.
const (
	FlashOn   = "on"
	FlashOff  = "off"
	FlashAuto = "auto"
)

// flashAttentionFor resolves setting ("on", "off", "auto" or "") for a context on the CPU
// (gpu false) or on a GPU runtime: the llama.cpp flag to create the context with and whether
// flash attention will run (ModelInfo.FlashAttention). An embedding model's "auto" is off:
// encoders were not measured (and Ollama turns it off for them too).
//
// On a GPU runtime "auto" is on: every GPU backend llama.cpp ships runs the fused kernel on the
// device, and it is what llama.cpp's own auto picks there (a layer left on the CPU runs the
// CPU kernel).
func flashAttentionFor(setting string, gpu, embeds bool) (ml.FlashAttentionType, bool, error) {
	switch setting {
	case FlashOn:
		return ml.FlashAttentionEnabled, true, nil
	case FlashOff:
		return ml.FlashAttentionDisabled, false, nil
	case FlashAuto, "":
		if gpu && !embeds {
			return ml.FlashAttentionEnabled, true, nil
		}
		return ml.FlashAttentionDisabled, false, nil
	}
	return ml.FlashAttentionDisabled, false, fmt.Errorf("flash attention %q: use %s, %s or %s", setting, FlashOn, FlashOff, FlashAuto)
}
