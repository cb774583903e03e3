// Package llamacpp runs GGUF models through llama.cpp (github.com/ollama/ollama/llama). It is
// the only package in the module that imports that cgo package; it lives inside the worker
// process so that an abort inside llama.cpp costs one request, never the app.
//
// One Engine owns one llama.cpp context. Requests become jobs; each job runs in a lane (one
// llama.cpp sequence), and one loop goroutine builds every batch: a token for each decoding
// lane plus prompt chunks for lanes still in prefill, so a long prompt never stalls running
// decodes. A lane keeps the tokens of its last sequence in the KV cache; a new job takes the
// free lane with the longest common token prefix and only prefills the rest.
//
// A fatal llama_decode (a negative code: the KV cache may hold part of the batch, out of step
// with the lanes) fails every job and closes Failed; the worker then exits and its client
// starts a fresh process. Options.VocabOnly loads just the tokenizer, for a tokenizing worker.
//
// Logprobs (Request.Logprobs, TopLogprobs) are the model's own distribution, the log-softmax
// of the raw logits before any sampler setting or grammar (see tokenLogprob), computed only for
// requests that ask, in one pass over the vocabulary per token.
//
// Tokenize runs llama_tokenize on a thread of its own whose stack is sized for the text
// (bigstack.go): llama.cpp's std::regex pre-tokenizers recurse per character of a run. A model
// that yields no finite logit fails the generation with llm.ErrModelFault; the engine goes on.
//
// Speculative decoding (spec.go): a decoding lane may feed its next token plus up to k drafted
// ones in the same batch, and verify samples the rows in order with the job's own sampler,
// grammar and logprobs, keeping drafts while they agree; the drafters are prompt lookup
// (ngram.go: the continuation of the last n-gram match in the lane's tokens) and a draft model
// with the target's vocabulary in its own context (draft.go). Per-lane adaptation shrinks k
// after rejections and pauses drafting while acceptance stays low. Done.Spec and the /slots
// totals count what was drafted and kept.
//
// A model whose GGUF says it embeds (a pooling type, or an encoder architecture such as BERT)
// runs the embedding loop instead (embed.go): the engine is then an llm.Embedder, pools one
// whole sequence per batch and refuses generation with llm.ErrUnsupportedModel. pooled.go
// declares the few llama.cpp calls the ollama/llama package does not expose for it.
//
// With Options.KVDir the prefix cache outlives the process (kvdisk.go, kvstore.go): a lane's
// KV state (llama_state_seq_get_data, declared in kvdisk_cgo.go) is saved to a file when the
// lane is taken for another prompt and when the engine closes, keyed by its tokens, the model
// file and the settings that shape the state; a prompt that starts with a saved prefix longer
// than any lane's has it restored instead of prefilled. Files are written atomically and
// checked (crc32c) before use, the folder is capped at Options.KVDiskMax (least recently used
// first), and Started/Done say how many tokens came back and why a prompt missed the cache.
//
// With Options.ProjectorPath the engine takes images and audio (media.go): llama.cpp's mtmd
// turns each into chunks, whose positions ride in the prompt as negative pseudo tokens keyed by
// the content's hash (so the prefix cache matches a re-sent image), and the loop evaluates each
// chunk whole as an embedding batch after the tick's text batch (media_loop.go).
//
// LoRA adapters (Request.Adapters, lora.go, lora_tick.go, lora_cgo.go) are loaded by path on
// first use, after the strict reader checked them against the model (and their factors'
// types and shapes against what llama.cpp multiplies; scales stay within ±100), and freed by
// ReleaseAdapter once no generation holds them. llama.cpp applies adapters to a whole context,
// so a tick makes one llama_decode per distinct adapter set among the busy lanes, the sets
// taking turns going first; a lane's cache partition names its set (each file's identity and
// scale), so memory reuse, copies and the disk cache never serve KV computed under another set.
package llamacpp
