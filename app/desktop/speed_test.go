package desktop_test

import (
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/tray"
)

// TestSpeedSettingsDialog: the dialog's speculation, draft model and attention settings are
// stored through the core (which checks the draft's vocabulary), read back and handed to the
// manager.
func TestSpeedSettingsDialog(t *testing.T) {
	c, cat, _ := newController(t)
	draft := cat.AddModel(t, "d", gguftest.TinyLlamaOptions{Layers: 1})
	cat.AddModel(t, "other", gguftest.TinyLlamaOptions{Vocab: 700})
	want := tray.ModelSettings{Speculative: "draft", DraftModel: "d", DraftTokens: 4, FlashAttention: "off"}
	if err := c.SetSettings("m", want); err != nil {
		t.Fatal(err)
	}
	got, err := c.Settings("m")
	if err != nil || got.Speculative != "draft" || got.DraftModel != "d" || got.DraftTokens != 4 || got.FlashAttention != "off" {
		t.Fatalf("read back %+v %v", got, err)
	}
	if set := cat.Mgr.Settings("m"); set.DraftModelPath != draft.Path || set.Speculative != "draft" {
		t.Fatalf("the manager holds %+v", set)
	}
	err = c.SetSettings("m", tray.ModelSettings{Speculative: "draft", DraftModel: "other"})
	if err == nil || !strings.Contains(err.Error(), "other has 700 tokens") || !strings.Contains(err.Error(), "m has 512") {
		t.Fatalf("a draft with another vocabulary: %v", err)
	}
}
