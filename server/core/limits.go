package core

import "github.com/superfluid/superfluid/runtime/llm"

// Text is refused by its length before anything tokenizes it. Tokenizing costs the worker
// about 13 bytes of memory per byte of text (a 100 MiB prompt made it allocate 1.3 GB), all of
// it wasted on a prompt that cannot fit the window anyway.
//
// The bound: a token never covers more text than the longest token text in the vocabulary
// (SentencePiece and BPE tokenizers, those of generative models, never shorten text), so a
// text longer than the window × that length can never fit. The engine reports the length
// (llm.ModelInfo.MaxTokenBytes); the limit allows twice as much, for tokenizers that
// normalize text (WordPiece strips accents, Unigram folds characters). Before a model's first
// load its vocabulary is unknown, and fallbackBytesPerToken stands in for it. For stories260K
// (longest token 7 bytes) and the tests' 512-token window that is 7 KiB; for a vocabulary
// whose longest token is 128 bytes and a 4,096-token window, 1 MiB.
//
// The same bound applies to counting and tokenizing (count_tokens, /v1/tokenize,
// /api/tokenize): those answer for text this model could take, and refusing longer text keeps
// a tokenize call from costing the worker more than a prompt could.

// fallbackBytesPerToken is the bound per token while the model's vocabulary is not known.
const fallbackBytesPerToken = 128

// maxPromptBytes is the longest text that could fit the window info describes; 0 when the
// window is not known.
func maxPromptBytes(info llm.ModelInfo) int {
	if info.ContextLength <= 0 {
		return 0
	}
	perToken := fallbackBytesPerToken
	if info.MaxTokenBytes > 0 {
		perToken = 2 * info.MaxTokenBytes
	}
	return info.ContextLength * perToken
}

// checkTextLength refuses text of n bytes that could not fit m's window, without tokenizing
// it: an llm.ContextLengthError whose PromptTokens is the least the text could tokenize to.
func checkTextLength(m *Model, n int) error {
	info := m.Info()
	limit := maxPromptBytes(info)
	if limit == 0 || n <= limit {
		return nil
	}
	perToken := limit / info.ContextLength
	return &llm.ContextLengthError{PromptTokens: (n + perToken - 1) / perToken, ContextLength: info.ContextLength, Bytes: n}
}
