package llamacpp

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

// TestTokenizeSpelledCharacters: a text of characters the vocabulary spells as byte tokens is
// refused with llm.ErrInvalidInput once the SentencePiece tokenizer would copy its tokens
// billions of times (FuzzTokenize found 262 KB of control characters that took the worker over
// 30 s), and texts that cost little still tokenize, however long.
func TestTokenizeSpelledCharacters(t *testing.T) {
	e, ctx := testEngine, context.Background()
	if e.chars == nil {
		t.Fatalf("%s: no SentencePiece guard", testModelPath)
	}
	hostile := strings.Repeat("\x00\x00\x00\x10", 65498) // the fuzzer's input
	if _, err := e.Tokenize(ctx, hostile, true, false); !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), "no token for") {
		t.Fatalf("Tokenize(262 KB of control characters) = %v, want llm.ErrInvalidInput", err)
	}
	var token string // a character the vocabulary has as a token of its own
	for r := range e.chars {
		if r >= 'a' && r <= 'z' {
			token = string(r)
			break
		}
	}
	for name, text := range map[string]string{
		"long run of a token":        strings.Repeat(token, 256<<10),
		"lines with spelled newline": strings.Repeat("Once upon a time\n", 8000),
		"short spelled text":         strings.Repeat("\x00", 4096),
		// Spelled characters one to a few at a time cost nearly nothing, however many: 1.4 MB
		// of lines and 1.1 MB of tab-indented code tokenize in under a second.
		"a long document of lines": strings.Repeat("Once upon a time\n", 80000),
		"tab-indented code":        strings.Repeat("\n\t\t\tx := y\n\t\t}", 80000),
		"short runs of spelled":    strings.Repeat(strings.Repeat("\x00", 100)+token, 10000),
	} {
		if ids, err := e.Tokenize(ctx, text, true, false); err != nil || len(ids) == 0 {
			t.Errorf("%s (%d bytes): %d ids, %v", name, len(text), len(ids), err)
		}
	}
}
