package llamacpp

// The per-sequence state API of llama.cpp, declared here by hand (as bigstack.go declares
// llama_tokenize), on the context pointer pooled.go's rawContext takes: the llama package of the module we build on does not wrap it.

/*
#include <stddef.h>
#include <stdint.h>

struct llama_context;
size_t llama_state_seq_get_size(struct llama_context * ctx, int32_t seq_id);
size_t llama_state_seq_get_data(struct llama_context * ctx, uint8_t * dst, size_t size, int32_t seq_id);
size_t llama_state_seq_set_data(struct llama_context * ctx, const uint8_t * src, size_t size, int32_t dest_seq_id);
extern const char * LLAMA_COMMIT; // build-info.cpp of the llama package
*/
import "C"

import (
	"unsafe"

	"github.com/ollama/ollama/llama"
)

// seqState copies sequence seq's KV state out of the context; nil when llama.cpp has none to
// give or fails.
func seqState(c *llama.Context, seq int) []byte {
	ctx := rawContext(c)
	size := C.llama_state_seq_get_size(ctx, C.int32_t(seq))
	if size == 0 {
		return nil
	}
	buf := make([]byte, int(size))
	n := C.llama_state_seq_get_data(ctx, (*C.uint8_t)(unsafe.Pointer(&buf[0])), size, C.int32_t(seq))
	if n == 0 || n > size {
		return nil
	}
	return buf[:int(n)]
}

// setSeqState loads a state seqState made into sequence seq, replacing what it held; it
// reports false when llama.cpp refuses the data (the sequence is then empty).
func setSeqState(c *llama.Context, seq int, state []byte) bool {
	if len(state) == 0 {
		return false
	}
	n := C.llama_state_seq_set_data(rawContext(c), (*C.uint8_t)(unsafe.Pointer(&state[0])), C.size_t(len(state)), C.int32_t(seq))
	return n != 0
}

// llamaCommit is the llama.cpp commit the llama package was built from.
func llamaCommit() string { return C.GoString(C.LLAMA_COMMIT) }
