package core_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/store"
)

// writeVocab writes a GGUF holding only a tokenizer (what the draft check reads).
func writeVocab(t *testing.T, path, model string, tokens []string) {
	t.Helper()
	w := gguftest.NewWriter()
	w.AddString("general.architecture", "llama")
	w.AddString("tokenizer.ggml.model", model)
	w.AddStrings("tokenizer.ggml.tokens", tokens)
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
}

// TestSpeedSettings: speculation, draft model and attention settings are checked, stored,
// handed to the manager (the draft as a file path) and reload the model when they change; a
// draft model must share the target's vocabulary.
func TestSpeedSettings(t *testing.T) {
	ctx := context.Background()
	cat := servertest.NewCatalog(t, models.Config{})
	target := cat.AddModel(t, "m", gguftest.TinyLlamaOptions{})
	draft := cat.AddModel(t, "d", gguftest.TinyLlamaOptions{Layers: 1, Embd: 32, Heads: 2, FF: 64})
	cat.AddModel(t, "other", gguftest.TinyLlamaOptions{Vocab: 600, Layers: 1})
	cat.AddModel(t, "big", gguftest.TinyLlamaOptions{Layers: 4, Embd: 128, FF: 256})

	set := store.ModelSettings{ModelID: "m", Speculative: llm.SpecDraft, DraftModel: "d", DraftTokens: 6, FlashAttention: core.FlashOn}
	if err := cat.Svc.SetModelSettings(ctx, set); err != nil {
		t.Fatal(err)
	}
	got := cat.Mgr.Settings("m")
	if got.Speculative != llm.SpecDraft || got.DraftModelPath != draft.Path || got.DraftTokens != 6 || got.FlashAttention != core.FlashOn {
		t.Fatalf("the manager holds %+v", got)
	}
	if back, err := cat.Svc.ModelSettings(ctx, "m"); err != nil || back.DraftModel != "d" || back.Speculative != llm.SpecDraft {
		t.Fatalf("stored %+v %v", back, err)
	}

	// A change of speculation reloads the model.
	if _, err := cat.Svc.LoadModel(ctx, "m"); err != nil {
		t.Fatal(err)
	}
	set.Speculative = llm.SpecNgram
	if err := cat.Svc.SetModelSettings(ctx, set); err != nil {
		t.Fatal(err)
	}
	m, _ := cat.Svc.Model("m")
	if m.Loaded() {
		t.Error("still loaded after its speculation changed")
	}
	if d, err := cat.Svc.DefaultsFor(ctx, m); err != nil || d.Speculative == nil || *d.Speculative != (llm.Speculative{Mode: llm.SpecNgram, DraftTokens: 6}) {
		t.Errorf("defaults: %+v %v, want the model's ngram with 6 draft tokens", d.Speculative, err)
	}
	if d, _ := cat.Svc.DefaultsFor(ctx, mustModel(t, cat, "d")); d.Speculative == nil || d.Speculative.Mode != llm.SpecOff {
		t.Errorf("a model without settings, no --speculative: %+v, want off", d.Speculative)
	}

	// A .gguf path outside the catalog is a draft model too.
	set.DraftModel = draft.Path
	if err := cat.Svc.SetModelSettings(ctx, set); err != nil || cat.Mgr.Settings("m").DraftModelPath != draft.Path {
		t.Fatalf("draft by path: %v, manager %+v", err, cat.Mgr.Settings("m"))
	}

	// Bigger than the target: accepted, with a warning.
	set.DraftModel = "big"
	if err := cat.Svc.SetModelSettings(ctx, set); err != nil {
		t.Fatalf("a bigger draft model: %v", err)
	}
	bigEntry, _ := cat.Mgr.Catalog().Lookup("big")
	warning, err := core.CheckDraftVocab("m", target.Path, "big", bigEntry.Path)
	if err != nil || !strings.Contains(warning, "draft model big") || !strings.Contains(warning, "bigger than m") {
		t.Errorf("bigger draft: warning %q, err %v", warning, err)
	}
	if warning, err := core.CheckDraftVocab("m", target.Path, "d", draft.Path); warning != "" || err != nil {
		t.Errorf("smaller draft: warning %q, err %v", warning, err)
	}

	tf, err := gguf.ReadFile(target.Path)
	if err != nil {
		t.Fatal(err)
	}
	tokens, _ := tf.Strings("tokenizer.ggml.tokens")
	changed := append([]string(nil), tokens...)
	changed[300] = "another"
	oneToken := filepath.Join(cat.Dir, "one-token.gguf")
	writeVocab(t, oneToken, "llama", changed)
	otherTokenizer := filepath.Join(cat.Dir, "gpt2.gguf")
	writeVocab(t, otherTokenizer, "gpt2", tokens)

	for _, bad := range []struct {
		name string
		set  store.ModelSettings
		want string
	}{
		{"another vocabulary size", store.ModelSettings{DraftModel: "other"}, "draft_model other has another vocabulary than m (another size): other has 600 tokens"},
		{"one token differs", store.ModelSettings{DraftModel: oneToken}, "(token 300 differs)"},
		{"another tokenizer", store.ModelSettings{DraftModel: otherTokenizer}, `(another tokenizer): ` + otherTokenizer + ` has 512 tokens (tokenizer "gpt2"), m has 512 (tokenizer "llama")`},
		{"unknown draft model", store.ModelSettings{DraftModel: "nope"}, `draft_model "nope" is neither a model in the catalog nor a .gguf file`},
		{"missing file", store.ModelSettings{DraftModel: filepath.Join(cat.Dir, "gone.gguf")}, "is neither a model in the catalog nor a .gguf file"},
		{"unknown mode", store.ModelSettings{Speculative: "medusa"}, `speculative: speculative mode "medusa" is unknown; use off, ngram or draft`},
		{"draft without a model", store.ModelSettings{Speculative: llm.SpecDraft}, "speculative draft needs a draft_model"},
		{"draft tokens 0 is the default, 33 too many", store.ModelSettings{DraftTokens: 33}, "draft_tokens must be between 1 and 32, got 33"},
		{"negative draft tokens", store.ModelSettings{DraftTokens: -2}, "got -2"},
		{"unknown attention", store.ModelSettings{FlashAttention: "maybe"}, `flash_attention "maybe" is unknown; use on, off or auto`},
	} {
		bad.set.ModelID = "m"
		err := cat.Svc.SetModelSettings(ctx, bad.set)
		if !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want a 400 containing %q", bad.name, err, bad.want)
		}
	}
	if got := cat.Mgr.Settings("m"); got.DraftModelPath != bigEntry.Path {
		t.Errorf("a refused change reached the manager: %+v", got)
	}
}

func mustModel(t *testing.T, cat *servertest.Catalog, id string) *core.Model {
	t.Helper()
	m, err := cat.Svc.Model(id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
