package ollama

import (
	"log/slog"
	"math"
	"strconv"
	"sync"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/server/core"
)

// modelMeta is what /api/tags, /api/show and /api/ps read from a model's GGUF file.
type modelMeta struct {
	details details
	license string
	tensors []tensor
	file    *gguf.File // nil when the file cannot be read
}

// metaCache keeps each model's metadata while its file is unchanged, so listings do not
// re-read GGUF headers.
type metaCache struct {
	mu      sync.Mutex
	entries map[string]metaEntry
}

type metaEntry struct {
	key  statKey
	meta *modelMeta
}

// get returns m's metadata; a file that cannot be read yields what the core knows.
func (c *metaCache) get(m *core.Model) *modelMeta {
	key, ok := stat(m.Path)
	if ok {
		c.mu.Lock()
		e, hit := c.entries[m.Path]
		c.mu.Unlock()
		if hit && e.key == key {
			return e.meta
		}
	}
	meta := readMeta(m, ok)
	if ok {
		c.mu.Lock()
		if c.entries == nil {
			c.entries = map[string]metaEntry{}
		}
		c.entries[m.Path] = metaEntry{key, meta}
		c.mu.Unlock()
	}
	return meta
}

func readMeta(m *core.Model, exists bool) *modelMeta {
	meta := &modelMeta{details: details{Format: "gguf", Family: m.Architecture}}
	if m.Architecture != "" {
		meta.details.Families = []string{m.Architecture}
	}
	if !exists {
		return meta
	}
	f, err := gguf.ReadFile(m.Path)
	if err != nil {
		slog.Warn("read model metadata", "model", m.Path, "err", err)
		return meta
	}
	meta.file = f
	if arch := f.Architecture(); arch != "" {
		meta.details.Family, meta.details.Families = arch, []string{arch}
	}
	meta.license, _ = f.String("general.license")
	var params uint64
	for _, t := range f.Tensors {
		params += t.Elements()
		meta.tensors = append(meta.tensors, tensor{Name: t.Name, Type: gguf.TypeName(t.Type), Shape: t.Dims})
	}
	if params > 0 {
		meta.details.ParameterSize = humanNumber(params)
	}
	meta.details.QuantizationLevel = core.Quantization(f)
	return meta
}

// modelInfo is the GGUF metadata as Ollama's model_info shows it: without general.name and the
// chat template (shown as template), and, unless verbose, with arrays longer than 5 emptied
// (the token lists).
func (m *modelMeta) modelInfo(verbose bool) map[string]any {
	info := map[string]any{}
	if m.file == nil {
		return info
	}
	for _, key := range m.file.Keys {
		if key == "general.name" || key == "tokenizer.chat_template" {
			continue
		}
		v := m.file.KV[key]
		if v.IsArray() && v.Len() > 5 && !verbose {
			info[key] = []any{}
			continue
		}
		info[key] = jsonValue(v)
	}
	if _, ok := info["general.parameter_count"]; !ok {
		var n uint64
		for _, t := range m.file.Tensors {
			n += t.Elements()
		}
		info["general.parameter_count"] = n
	}
	return info
}

// jsonValue converts a GGUF value into something encoding/json writes faithfully: byte
// arrays as numbers (not base64), non-finite floats as null.
func jsonValue(v gguf.Value) any {
	if !v.IsArray() {
		return jsonScalar(v.Raw())
	}
	if s, ok := v.Strings(); ok {
		return s
	}
	if ints, ok := v.Ints(); ok {
		return ints
	}
	out := make([]any, 0, v.Len())
	if floats, ok := v.Floats(); ok {
		for _, f := range floats {
			out = append(out, jsonScalar(f))
		}
		return out
	}
	return v.String() // arrays of bools or of arrays: their display form
}

func jsonScalar(x any) any {
	switch f := x.(type) {
	case float32:
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return nil
		}
	case float64:
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil
		}
	}
	return x
}

// humanNumber writes a parameter count as Ollama does: "8B", "1.1B", "135.27M", "260K".
func humanNumber(n uint64) string {
	const thousand, million, billion = 1e3, 1e6, 1e9
	x := float64(n)
	switch {
	case x >= billion:
		return trimWhole(x/billion, 1) + "B"
	case x >= million:
		return trimWhole(x/million, 2) + "M"
	case x >= thousand:
		return strconv.FormatFloat(x/thousand, 'f', 0, 64) + "K"
	default:
		return strconv.FormatUint(n, 10)
	}
}

// trimWhole formats x with prec decimals, or none when x is whole.
func trimWhole(x float64, prec int) string {
	if x == math.Floor(x) {
		prec = 0
	}
	return strconv.FormatFloat(x, 'f', prec, 64)
}
