package llamacpp

import (
	"path/filepath"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
)

// TestSpecRecurrentModel (rev21b): a recurrent model's memory cannot drop the tail of a
// sequence, so a rejected draft cannot be taken back (llama_memory_seq_rm returns false).
// With speculation on — n-gram is the app's default — the reply must still be the plain one
// and the engine must keep working.
func TestSpecRecurrentModel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mamba.gguf")
	if err := gguftest.WriteTinyMamba(path, gguftest.TinyLlamaOptions{Seed: 3}); err != nil {
		t.Fatal(err)
	}
	e := specEngine(t, path, "")
	for _, prompt := range specPrompts {
		req := greedy(prompt, 60)
		want := mustGenerate(t, e, req)
		got, err := generate(t, e, withSpec(req, llm.SpecNgram, 8))
		if err != nil {
			t.Fatalf("prompt %.20q with n-gram speculation: %v (plain: %q)", prompt, err, want.text)
		}
		if got.text != want.text {
			t.Fatalf("prompt %.20q: speculation changed the reply (Done.Spec %+v)\nplain %q\nspec  %q",
				prompt, got.done.Spec, want.text, got.text)
		}
		if got.done.Spec != nil && got.done.Spec.Proposed > 0 {
			t.Fatalf("prompt %.20q: drafted %d tokens on a model that cannot take them back", prompt, got.done.Spec.Proposed)
		}
	}
}

// TestSpecRecurrentDraftModel (rev21b): a recurrent draft model cannot drop the drafts the
// target rejects; it is not used (n-gram stands in, with the note) and the reply is the plain one.
func TestSpecRecurrentDraftModel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mamba.gguf")
	if err := gguftest.WriteTinyMamba(path, gguftest.TinyLlamaOptions{Seed: 3}); err != nil {
		t.Fatal(err)
	}
	e := specEngine(t, testModelPath, path)
	req := greedy(specPrompts[1], 60)
	want := mustGenerate(t, e, req)
	got := mustGenerate(t, e, withSpec(req, llm.SpecDraft, 4))
	if got.text != want.text {
		t.Fatalf("speculation changed the reply\nplain %q\nspec  %q", want.text, got.text)
	}
	if s := got.done.Spec; s == nil || s.Mode != llm.SpecNgram || s.Note == "" {
		t.Fatalf("Done.Spec = %+v, want n-gram with a note", s)
	}
}
