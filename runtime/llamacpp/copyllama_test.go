package llamacpp

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

// TestCopyLlamaCopies checks the hand-set copy model (gguftest.WriteCopyLlama) that the speed
// bench's edit workload runs on: asked to continue the start of a text it has seen, it writes
// the rest of that text token for token, as a model rewriting its input does.
func TestCopyLlamaCopies(t *testing.T) {
	path := filepath.Join(t.TempDir(), "copy.gguf")
	opts := gguftest.TinyLlamaOptions{Vocab: 2048, Embd: 768, Layers: 2, Heads: 12, KVHeads: 2, FF: 128, ContextLength: 2048}
	if err := gguftest.WriteCopyLlama(path, opts); err != nil {
		t.Fatal(err)
	}
	e, err := Load(Options{ModelPath: path, ContextLength: 2048, Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	text := gguftest.CopyText(400, 1)
	words := strings.Fields(text)
	start := strings.Join(words[:5], " ")
	rest := " " + strings.Join(words[5:], " ")
	r := mustGenerate(t, e, greedy(text+"\n"+start, 120))
	if r.done.Usage.CompletionTokens != 120 || !strings.HasPrefix(rest, r.text) {
		n := 0
		for n < min(len(r.text), len(rest)) && r.text[n] == rest[n] {
			n++
		}
		t.Fatalf("the copy model wrote %d tokens and left the text after %d bytes:\n got %q\nwant %q",
			r.done.Usage.CompletionTokens, n, r.text[n:min(len(r.text), n+60)], rest[n:min(len(rest), n+60)])
	}
	// A text it has not seen is not copied from anywhere: the same start without the text.
	if other := mustGenerate(t, e, greedy(start, 20)); strings.HasPrefix(rest, other.text) {
		t.Errorf("without the text in its prompt the model still wrote it: %q", other.text)
	}
}
