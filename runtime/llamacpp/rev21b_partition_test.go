package llamacpp

import (
	"sync/atomic"
	"testing"

	"github.com/ollama/ollama/llama"

	"github.com/superfluid/superfluid/runtime/llm"
)

// TestSpecDraftPartitionIsolated (rev21b): the draft model's context must not serve a lane's
// tokens to another cache partition (person) any more than the target's KV does: otherwise
// the time to the second token tells B that A sent the same prompt. On one lane, A's prompt
// then B's: B's catch-up feeds the draft model the whole prompt again.
func TestSpecDraftPartitionIsolated(t *testing.T) {
	e, err := Load(Options{ModelPath: testModelPath, ContextLength: testCtx, Parallel: 1, DraftModelPath: testModelPath})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	var rows atomic.Int64
	d := e.spec.draft
	decode := d.decode
	d.decode = func(b *llama.Batch) error {
		rows.Add(int64(b.NumTokens()))
		return decode(b)
	}
	prompt := story(t, e, "Lily", 200)
	n := len(tokenize(t, e, prompt))
	run := func(partition string) int64 {
		rows.Store(0)
		req := withSpec(greedy(prompt, 4), llm.SpecDraft, 2)
		req.CachePartition = partition
		mustGenerate(t, e, req)
		return rows.Load()
	}
	run("alice")
	if same := run("alice"); same >= int64(n) {
		t.Fatalf("the same partition fed the draft model %d rows for a %d-token prompt it had: no reuse to measure", same, n)
	}
	if other := run("bob"); other < int64(n) {
		t.Fatalf("partition bob's draft catch-up fed %d rows for a %d-token prompt: alice's draft KV served bob", other, n)
	}
}
