package core

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server/store"
)

// Flash attention settings of a model ("" is auto).
const (
	FlashOn   = "on"
	FlashOff  = "off"
	FlashAuto = "auto"
)

// checkSpeedSettings refuses bad speculation and attention settings for the target model m
// (400s naming the setting), and checks the draft model against it: it must exist (a catalog
// model or a .gguf file) and share the target's vocabulary. A draft model bigger than the
// target is kept with a warning (returned, and logged).
func (s *Service) checkSpeedSettings(m *Model, set store.ModelSettings) (warning string, err error) {
	if err := CheckSpeculativeMode(set.Speculative); err != nil {
		return "", fmt.Errorf("%w: speculative: %v", llm.ErrInvalidInput, err)
	}
	if err := CheckDraftTokens(set.DraftTokens); err != nil {
		return "", fmt.Errorf("%w: %v", llm.ErrInvalidInput, err)
	}
	switch set.FlashAttention {
	case "", FlashOn, FlashOff, FlashAuto:
	default:
		return "", fmt.Errorf("%w: flash_attention %q is unknown; use on, off or auto", llm.ErrInvalidInput, set.FlashAttention)
	}
	if set.DraftModel == "" {
		if set.Speculative == llm.SpecDraft {
			return "", fmt.Errorf("%w: speculative draft needs a draft_model (a catalog model or a .gguf file with %s's vocabulary)", llm.ErrInvalidInput, m.ID)
		}
		return "", nil
	}
	path, err := s.draftPath(set.DraftModel)
	if err != nil {
		return "", err
	}
	if warning, err = CheckDraftVocab(m.ID, m.Path, set.DraftModel, path); warning != "" {
		slog.Warn(warning, "model", m.ID, "draft_model", set.DraftModel)
	}
	return warning, err
}

// draftPath is the GGUF file a draft_model setting names: a catalog model's file, else the
// setting itself when it is a .gguf file. Anything else is a 400.
func (s *Service) draftPath(name string) (string, error) {
	if s.mgr != nil {
		if e, err := s.mgr.Catalog().Lookup(name); err == nil {
			return e.Path, nil
		}
	}
	if strings.EqualFold(filepath.Ext(name), ".gguf") {
		if fi, err := os.Stat(name); err == nil && fi.Mode().IsRegular() {
			return name, nil
		}
	}
	return "", fmt.Errorf("%w: draft_model %q is neither a model in the catalog nor a .gguf file", llm.ErrInvalidInput, name)
}

// CheckDraftVocab compares a draft model's tokenizer with the target's from their GGUF
// metadata, without loading either: the same tokenizer model and the same token list, or a
// 400 naming both models and both vocabulary sizes. A draft file bigger than the target's is
// allowed, with a warning (speculation then costs more than it saves).
func CheckDraftVocab(target, targetPath, draft, draftPath string) (warning string, err error) {
	t, err := gguf.ReadFile(targetPath)
	if err != nil {
		return "", fmt.Errorf("read %s to check its draft model: %w", target, err)
	}
	d, err := gguf.ReadFile(draftPath)
	if err != nil {
		return "", fmt.Errorf("%w: draft_model %s: %v", llm.ErrInvalidInput, draft, err)
	}
	tTokens, _ := t.Strings("tokenizer.ggml.tokens")
	dTokens, _ := d.Strings("tokenizer.ggml.tokens")
	tModel, _ := t.String("tokenizer.ggml.model")
	dModel, _ := d.String("tokenizer.ggml.model")
	differ := func(why string) error {
		return fmt.Errorf("%w: draft_model %s has another vocabulary than %s (%s): %s has %d tokens (tokenizer %q), %s has %d (tokenizer %q)",
			llm.ErrInvalidInput, draft, target, why, draft, len(dTokens), dModel, target, len(tTokens), tModel)
	}
	switch {
	case len(tTokens) == 0 || len(dTokens) == 0:
		return "", differ("a token list is missing")
	case tModel != dModel:
		return "", differ("another tokenizer")
	case len(tTokens) != len(dTokens):
		return "", differ("another size")
	}
	for i := range tTokens {
		if tTokens[i] != dTokens[i] {
			return "", differ(fmt.Sprintf("token %d differs", i))
		}
	}
	ts, ds := fileSize(targetPath), fileSize(draftPath)
	if ds > ts {
		return fmt.Sprintf("draft model %s (%d bytes) is bigger than %s (%d bytes): drafting with it costs more than it saves", draft, ds, target, ts), nil
	}
	return "", nil
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// speedSettings are what the manager hands the worker of the model's speed settings: the
// draft model as a file path (its catalog id resolved now, so a renamed entry keeps working
// until the next change).
func (s *Service) speedSettings(set store.ModelSettings, into *models.Settings) {
	into.Speculative, into.DraftTokens, into.FlashAttention = set.Speculative, set.DraftTokens, set.FlashAttention
	if set.DraftModel != "" {
		if path, err := s.draftPath(set.DraftModel); err == nil {
			into.DraftModelPath = path
		} else {
			slog.Warn("a model's draft model is gone; it loads without one", "model", set.ModelID, "draft_model", set.DraftModel)
		}
	}
}

// speedChanged reports whether a settings change touches what the worker is started with
// (speculation, draft model, attention), so the model must reload.
func speedChanged(a, b store.ModelSettings) bool {
	return a.Speculative != b.Speculative || a.DraftModel != b.DraftModel || a.DraftTokens != b.DraftTokens || a.FlashAttention != b.FlashAttention
}
