package source

import (
	"path"
	"slices"
	"strings"
)

// IsProjectorName reports whether a GGUF file name is a multimodal projector's by the
// convention llama.cpp's converter and the Hub's repositories follow: "mmproj" in the name
// ("mmproj-F16.gguf", "model-mmproj-f16.gguf").
func IsProjectorName(name string) bool {
	base := strings.ToLower(path.Base(name))
	return strings.HasSuffix(base, ".gguf") && strings.Contains(base, "mmproj")
}

// RankProjectors orders projector file names best first for a model of quantization quant
// ("Q4_K_M"): one of the same quantization, then F16, then BF16, then the rest, each group by
// name. A repository that ships one projector per quantization means them to be paired;
// otherwise F16 keeps the (small, precision-sensitive) encoder as trained.
func RankProjectors(names []string, quant string) []string {
	out := slices.Clone(names)
	rank := func(name string) int {
		base := strings.ToLower(strings.TrimSuffix(path.Base(name), path.Ext(name)))
		// Quantization tags hold underscores ("Q4_K_M"): the name splits at '-' and '.' only.
		tokens := strings.FieldsFunc(base, func(r rune) bool { return r == '-' || r == '.' })
		has := func(tag string) bool { return slices.Contains(tokens, tag) }
		switch {
		case quant != "" && has(strings.ToLower(quant)):
			return 0
		case has("f16") || has("fp16"):
			return 1
		case has("bf16"):
			return 2
		}
		return 3
	}
	slices.SortStableFunc(out, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	return out
}
