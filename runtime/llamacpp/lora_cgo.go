package llamacpp

// llama.cpp's LoRA adapter calls, declared here by hand against llama.h's ABI (as pooled.go
// does): the llama package of the module we build on only applies one adapter at load time.

/*
#include <stdbool.h>
#include <stdlib.h>
#include <stdint.h>
struct llama_model;
struct llama_context;
struct llama_adapter_lora;
struct llama_adapter_lora * llama_adapter_lora_init(struct llama_model * model, const char * path_lora);
void llama_adapter_lora_free(struct llama_adapter_lora * adapter);
int32_t llama_set_adapter_lora(struct llama_context * ctx, struct llama_adapter_lora * adapter, float scale);
void llama_clear_adapter_lora(struct llama_context * ctx);
void llama_set_embeddings(struct llama_context * ctx, bool embeddings);
struct llama_perf_context_data {
	double t_start_ms;
	double t_load_ms;
	double t_p_eval_ms;
	double t_eval_ms;
	int32_t n_p_eval;
	int32_t n_eval;
	int32_t n_reused;
};
struct llama_perf_context_data llama_perf_context(const struct llama_context * ctx);
*/
import "C"

import (
	"unsafe"

	"github.com/ollama/ollama/llama"
)

// loraHandle is a loaded llama_adapter_lora.
type loraHandle = *C.struct_llama_adapter_lora

// loraInit loads the adapter file at path for model m; nil when llama.cpp refuses it (its log
// says why).
func loraInit(m *llama.Model, path string) loraHandle {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	return C.llama_adapter_lora_init(rawModel(m), cpath)
}

// loraFree frees an adapter no context applies any more.
func loraFree(h loraHandle) { C.llama_adapter_lora_free(h) }

// appliedLoRA is one adapter of the set a context computes with.
type appliedLoRA struct {
	handle loraHandle
	scale  float32
}

// setContextAdapters makes set the context's adapters, replacing the ones it had.
//
// The pinned llama.cpp reuses the previous compute graph when a batch has the same shape, and
// its reuse test compares the context's adapter map by address (always equal): after a change
// of adapters it would run the old graph, with the old adapters and scales in it. The test
// does compare the embeddings flag, so flipping it makes the next decode build a new graph.
// ollama's llama package creates every context with the flag on; for a generation model (no
// pooling) it only copies the output rows' last hidden state, which nothing reads, so either
// value serves. embeddings is the flag's new value.
func setContextAdapters(c *llama.Context, set []appliedLoRA, embeddings bool) {
	ctx := rawContext(c)
	C.llama_clear_adapter_lora(ctx)
	for _, a := range set {
		C.llama_set_adapter_lora(ctx, a.handle, C.float(a.scale))
	}
	C.llama_set_embeddings(ctx, C.bool(embeddings))
}

// graphReuses is how many decodes of the context reused the previous compute graph.
func graphReuses(c *llama.Context) int { return int(C.llama_perf_context(rawContext(c)).n_reused) }
