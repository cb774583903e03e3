package llamacpp

import (
	"fmt"

	"github.com/ollama/ollama/ml"
)

// Flash attention is fixed when llama.cpp creates a context, for prefill and decode alike, and
// it shapes the KV cache (V is stored transposed without it), so one context cannot switch per
// phase and two contexts would need two KV caches and a copy between layouts on every turn.
// The engine therefore runs one setting per model and runtime, chosen by flashAttentionFor.
//
// Measured on the CPU runtime (AMD EPYC, 2 threads, TinyLlama-1.1B-shaped Q8_0, 5 runs,
// medians; TestFlashAttentionSpeed): see flashCPUDefault for the numbers behind the choice.

// Flash attention settings of Options.FlashAttention.
const (
	FlashOn   = "on"
	FlashOff  = "off"
	FlashAuto = "auto"
)

// flashCPUDefault is what "auto" means on the CPU runtime. On (as Ollama's default on CPU): the
// fused kernel reads the f16 KV once per token instead of materialising the attention matrix,
// which speeds single-stream decode, and on this CPU it did not slow 512- or 2,000-token
// prefills by more than the noise (TestFlashAttentionSpeed's numbers are in the report of
// issue 21).
const flashCPUDefault = true

// flashAttentionFor resolves setting ("on", "off", "auto" or "") for a context on the CPU
// (gpu false) or on a GPU runtime: the llama.cpp flag to create the context with and whether
// flash attention will run (ModelInfo.FlashAttention). An embedding model's "auto" is off, as
// before: encoders were not measured (and Ollama turns it off for them too).
//
// On a GPU runtime "auto" is on: every GPU backend llama.cpp ships runs the fused kernel on the
// device, and it is what llama.cpp's own auto picks there; a layer left on the CPU runs the
// CPU kernel, which is the CPU default as well.
func flashAttentionFor(setting string, gpu, embeds bool) (ml.FlashAttentionType, bool, error) {
	switch setting {
	case FlashOn:
		return ml.FlashAttentionEnabled, true, nil
	case FlashOff:
		return ml.FlashAttentionDisabled, false, nil
	case FlashAuto, "":
		if !embeds && (gpu || flashCPUDefault) {
			return ml.FlashAttentionEnabled, true, nil
		}
		return ml.FlashAttentionDisabled, false, nil
	}
	return ml.FlashAttentionDisabled, false, fmt.Errorf("flash attention %q: use %s, %s or %s", setting, FlashOn, FlashOff, FlashAuto)
}
