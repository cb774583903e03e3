package llamacpp

// The pinned ollama/llama package copies NEmbd floats from llama_get_embeddings_seq, but
// for a rank pooling head llama.cpp holds only n_cls_out floats there (a read past the end),
// and it exposes neither the context's pooling type nor n_cls_out. These few calls fill the
// gap, declared here against llama.h's ABI (the symbols come from the ollama/llama package).

/*
#include <stdint.h>
struct llama_context;
struct llama_model;
float * llama_get_embeddings_seq(struct llama_context * ctx, int32_t seq_id);
int llama_pooling_type(const struct llama_context * ctx);
uint32_t llama_model_n_cls_out(const struct llama_model * model);
const struct llama_model * llama_get_model(const struct llama_context * ctx);
*/
import "C"

import (
	"unsafe"

	"github.com/ollama/ollama/llama"
)

// rawContext is the llama_context of c: llama.Context's first field (its only pointer).
func rawContext(c *llama.Context) *C.struct_llama_context {
	return *(**C.struct_llama_context)(unsafe.Pointer(c))
}

// contextPooling is the pooling type the context runs with (gguf.PoolingNone ... PoolingRank).
func contextPooling(c *llama.Context) int { return int(C.llama_pooling_type(rawContext(c))) }

// rankOutputs is the number of scores a rank head gives per sequence (n_cls_out).
func rankOutputs(c *llama.Context) int {
	return int(C.llama_model_n_cls_out(C.llama_get_model(rawContext(c))))
}

// seqVector copies the n floats llama.cpp pooled for sequence seq in the last decode; nil when
// there are none (no pooling, or the sequence was not in the batch).
func seqVector(c *llama.Context, seq, n int) []float32 {
	p := C.llama_get_embeddings_seq(rawContext(c), C.int32_t(seq))
	if p == nil || n <= 0 {
		return nil
	}
	return append([]float32(nil), unsafe.Slice((*float32)(unsafe.Pointer(p)), n)...)
}
