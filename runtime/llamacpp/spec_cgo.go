package llamacpp

// Whether a model's memory can drop the tail of a sequence, which verification needs to take
// back a rejected draft; declared against llama.h's ABI as pooled.go does.

/*
#include <stdbool.h>
struct llama_model;
struct llama_context;
void llama_synchronize(struct llama_context * ctx);
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

// synchronize waits for the context's last llama_decode to finish computing: on a GPU
// backend llama_decode returns once the graph is submitted (the first llama_get_logits_ith
// waits), so a tick's time measured around it alone is the submission's (rev21b).
func synchronize(c *llama.Context) { C.llama_synchronize(rawContext(c)) }
