package llamacpp

// Whether a model's memory can drop the tail of a sequence, which verification needs to take
// back a rejected draft; declared against llama.h's ABI as pooled.go does.

/*
#include <stdbool.h>
struct llama_model;
bool llama_model_is_recurrent(const struct llama_model * model);
bool llama_model_is_hybrid(const struct llama_model * model);
*/
import "C"

import "github.com/ollama/ollama/llama"

// trimsTail reports whether m's memory is a KV cache only: a recurrent or hybrid model's
// state cannot be rolled back to an earlier position (llama_memory_seq_rm refuses), so a
// rejected draft would stay in it.
func trimsTail(m *llama.Model) bool {
	r := rawModel(m)
	return !bool(C.llama_model_is_recurrent(r)) && !bool(C.llama_model_is_hybrid(r))
}
