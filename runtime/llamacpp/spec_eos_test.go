package llamacpp

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
)

// TestSpecEOSInDraft: random-weight models whose greedy replies end with EOS (found by trying
// seeds), drafting for themselves: the draft model proposes the EOS the target then samples,
// and with k from 1 to 8 it falls inside a draft for most k (with all drafts kept, positions
// 1..k of every k+1 are drafted). The reply is the same as plain decoding's and stops there.
func TestSpecEOSInDraft(t *testing.T) {
	for _, c := range []struct {
		seed   int64
		prompt string
		tokens int
	}{{5, "a", 85}, {10, "hello", 15}, {20, "xyz", 82}} {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("random-%d.gguf", c.seed))
		if err := gguftest.WriteTinyLlama(path, gguftest.TinyLlamaOptions{Seed: c.seed, Vocab: 260}); err != nil {
			t.Fatal(err)
		}
		e := specEngine(t, path, path)
		req := greedy(c.prompt, 400)
		req.Logprobs, req.TopLogprobs = true, 2
		want := mustGenerate(t, e, req)
		if want.done.FinishReason != llm.FinishStop || want.done.Usage.CompletionTokens != c.tokens {
			t.Fatalf("seed %d: plain reply of %d tokens (%s), want EOS after %d", c.seed, want.done.Usage.CompletionTokens, want.done.FinishReason, c.tokens)
		}
		for k := 1; k <= 8; k++ {
			for _, mode := range []string{llm.SpecDraft, llm.SpecNgram} {
				got := mustGenerate(t, e, withSpec(req, mode, k))
				sameGeneration(t, fmt.Sprintf("seed %d %s k=%d", c.seed, mode, k), want, got)
			}
		}
	}
}
