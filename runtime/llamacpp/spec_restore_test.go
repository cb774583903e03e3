package llamacpp

import (
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

// TestSpecDraftAfterRestore: a lane whose prefix came from the disk cache (a fresh engine, a
// fresh draft context) drafts with the draft model after catching it up, and the reply is the
// plain one of an engine that never closed.
func TestSpecDraftAfterRestore(t *testing.T) {
	dir := t.TempDir()
	load := func() *Engine {
		e, err := Load(Options{ModelPath: testModelPath, ContextLength: testCtx, Parallel: 2, KVDir: dir, DraftModelPath: testModelPath})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	e1 := load()
	prompt := story(t, e1, "Lily", 200)
	const more = " Then the dog said"
	mustGenerate(t, e1, withSpec(greedy(prompt, 16), llm.SpecDraft, 4))
	e1.Close()
	e2 := load()
	req := greedy(prompt+more, 40)
	req.Logprobs, req.TopLogprobs = true, 2
	got := mustGenerate(t, e2, withSpec(req, llm.SpecDraft, 4))
	if got.started.RestoredTokens == 0 {
		t.Fatalf("nothing restored (miss %q)", got.started.CacheMiss)
	}
	ref := loadOwn(t, 1)
	mustGenerate(t, ref, greedy(prompt, 16))
	want := mustGenerate(t, ref, req)
	sameGeneration(t, "after restore", want, got)
	if s := got.done.Spec; s == nil || s.Proposed == 0 || s.Accepted < s.Proposed*9/10 {
		t.Fatalf("self-draft after a restore: Done.Spec = %+v, want nearly every draft kept", s)
	}
}
