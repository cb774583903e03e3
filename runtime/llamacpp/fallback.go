package llamacpp

import (
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/llm"
)

// maxFallbackWork bounds the tokens llama.cpp's SPM tokenizer may copy for one text (see
// spmChars): about 4 s of one core, where a text of 262 KB of control characters needs 70
// billion copies (over 30 s, past the worker's reply timeout, the CPU burning on).
const maxFallbackWork = 1e10

// spmChars guards llama.cpp's SentencePiece tokenizer (tokenizer.ggml.model "llama": Llama 2,
// Mistral 7B, TinyLlama, stories260K) against a cost that grows with the square of the text.
// A character that is not a token of its own is spelled as byte tokens, and for each such
// character the pinned llama.cpp reserves exactly the room those bytes need
// (llm_tokenizer_spm_session::resegment in llama-vocab.cpp), so the vector of tokens is copied
// whole every time. It holds the characters that are tokens (nil for other tokenizers, which
// do not have the problem).
type spmChars map[rune]bool

// newSPMChars returns the single-character tokens of f's vocabulary, or nil when f's tokenizer
// is not SentencePiece.
func newSPMChars(f *gguf.File) spmChars {
	if model, _ := f.String("tokenizer.ggml.model"); model != "llama" {
		return nil
	}
	tokens, _ := f.Strings("tokenizer.ggml.tokens")
	chars := spmChars{}
	for _, t := range tokens {
		if r, n := utf8.DecodeRuneInString(t); n == len(t) && r != utf8.RuneError {
			chars[r] = true
		}
	}
	return chars
}

// check refuses a text whose characters without a token of their own would make the
// tokenizer copy more than maxFallbackWork tokens. A copy happens only when such a character
// finds the vector full; the token that follows a run of them grows it by half or more (the
// usual doubling), so only the run that filled it copies, once per character from there on.
// The vector fills at most once per doubling, about log2 of the text's bytes times, so a text
// costs at most that many of its longest run's copies of every token so far (no more than one
// per byte, and BOS), and never more than one for each such character. Ordinary text, whose
// newlines and tabs are spelled but come one to a few at a time, costs nearly nothing: 1.4 MB
// of lines tokenizes in under a second, while one run of 128 KB of control characters takes
// seconds.
func (c spmChars) check(text string) error {
	n := float64(len(text) + 2)
	if c == nil || n*n <= maxFallbackWork {
		return nil
	}
	spelled, run, longest := 0, 0, 0
	for _, r := range text {
		if r == ' ' {
			r = '▁' // SentencePiece's space
		}
		if c[r] {
			run = 0
			continue
		}
		spelled++
		run++
		longest = max(longest, run)
	}
	copies := min(float64(spelled), (math.Log2(n)+2)*float64(longest))
	if copies*n > maxFallbackWork {
		return fmt.Errorf("%w: the text holds %d characters in a row the model's vocabulary has no token for "+
			"(control characters, binary data or rare symbols), too many for %d bytes of text to tokenize; "+
			"remove them or send a shorter text", llm.ErrInvalidInput, longest, len(text))
	}
	return nil
}
