package models

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models/source"
)

// A model's multimodal projector (an mmproj GGUF) is a file of its own beside the model's: the
// catalog records its path with the model (Record.Projector), never as a model, and the
// model's capabilities say what it encodes.

// Capability names a projector adds (Ollama's).
const (
	CapabilityVision = "vision"
	CapabilityAudio  = "audio"
)

// describeProjector adds what the projector at path says to the model's facts: its encoders and
// its size (it loads beside the model's weights). A projector that cannot be read leaves the
// model without vision or audio; ProjectorErr says why, and a load fails saying so.
func describeProjector(facts *Facts, path string) {
	if path == "" {
		return
	}
	f, err := gguf.ReadFile(path)
	if err != nil {
		facts.ProjectorErr = err
		return
	}
	p, err := f.Projector()
	if err != nil {
		facts.ProjectorErr = fmt.Errorf("%s: %w", path, err)
		return
	}
	facts.Vision, facts.Audio, facts.ProjectorBytes = p.Vision, p.Audio, f.FileSize
	if p.Vision {
		facts.Capabilities = append(facts.Capabilities, CapabilityVision)
	}
	if p.Audio {
		facts.Capabilities = append(facts.Capabilities, CapabilityAudio)
	}
}

// findProjector is the projector beside the model at path that fits it (its output width is
// the model's input width), "" for none: of several, RankProjectors' first for the model's
// quantization. Projectors for other models in the same folder are passed over.
func findProjector(path, quant string) string {
	dir := filepath.Dir(path)
	items, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var names []string
	for _, it := range items {
		if it.Type().IsRegular() && source.IsProjectorName(it.Name()) && filepath.Join(dir, it.Name()) != path {
			names = append(names, it.Name())
		}
	}
	if len(names) == 0 {
		return ""
	}
	model, err := gguf.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, name := range namedFirst(source.RankProjectors(names, quant), filepath.Base(path)) {
		cand := filepath.Join(dir, name)
		proj, err := gguf.ReadFile(cand)
		if err != nil {
			continue
		}
		if err := gguf.FitProjector(model, proj); err != nil {
			slog.Debug("a projector beside the model does not fit it", "model", path, "projector", cand, "err", err)
			continue
		}
		return cand
	}
	return ""
}

// namedFirst orders projector names by how much of the model file's name they carry (the
// longest common prefix once "mmproj" is taken off), keeping ranked's order among equals: in a
// folder of several models with their projectors, "mmproj-stories-vision.gguf" goes with
// "stories-vision.gguf", not "mmproj-stories-audio.gguf" that fits it as well.
func namedFirst(ranked []string, model string) []string {
	stem := strings.ToLower(strings.TrimSuffix(model, ".gguf"))
	shared := func(name string) int {
		n := strings.ToLower(strings.TrimSuffix(name, ".gguf"))
		n = strings.Trim(strings.Replace(n, "mmproj", "", 1), "-_.")
		i := 0
		for i < len(n) && i < len(stem) && n[i] == stem[i] {
			i++
		}
		return i
	}
	out := slices.Clone(ranked)
	slices.SortStableFunc(out, func(a, b string) int { return shared(b) - shared(a) })
	return out
}

// checkProjector refuses a projector named for the model at path that does not fit it, in the
// words of gguf.CheckProjector (both files named), as bad input.
func checkProjector(path, projector string) error {
	if err := gguf.CheckProjector(path, projector); err != nil {
		return fmt.Errorf("%w: %v", llm.ErrInvalidInput, err)
	}
	return nil
}

// ErrIsProjector is Register's refusal of a projector file as a model; it wraps ErrNotModel.
var ErrIsProjector = fmt.Errorf("%w: a multimodal projector (mmproj) is not a model", ErrNotModel)

// kindOf settles what a record being registered is: an adapter (its base model found or
// checked, no projector), or a model with its projector (the one named, checked against it,
// else one found beside it) and what that encodes in its capabilities.
func (c *Catalog) kindOf(r *Record, facts *Facts) error {
	if facts.Adapter {
		if r.Projector != "" {
			return fmt.Errorf("%w: %s is a LoRA adapter, which takes no projector", llm.ErrInvalidInput, r.Path)
		}
		base, err := c.adapterBase(r.Path, r.BaseModel)
		if err != nil {
			return err
		}
		r.Kind, r.BaseModel = KindAdapter, base
		return nil
	}
	if r.BaseModel != "" {
		return fmt.Errorf("%w: %s is a model, not a LoRA adapter: a base model is for adapters", llm.ErrInvalidInput, r.Path)
	}
	r.Kind = KindModel
	switch {
	case r.Projector != "":
		if err := checkProjector(r.Path, r.Projector); err != nil {
			return err
		}
	case r.Source != SourceAlias:
		r.Projector = findProjector(r.Path, facts.Quantization)
	}
	describeProjector(facts, r.Projector)
	return nil
}
