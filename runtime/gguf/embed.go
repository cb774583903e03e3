package gguf

import "math"

// Pooling types, as llama.cpp numbers them in <arch>.pooling_type.
const (
	PoolingNone = 0
	PoolingMean = 1
	PoolingCLS  = 2
	PoolingLast = 3
	PoolingRank = 4
)

// PoolingName is the name of a pooling type as llm.Embedding gives it: "mean", "cls", "last" or
// "rank". PoolingNone is "mean": a model that embeds without pooling is pooled by the mean of
// its token vectors.
func PoolingName(t int) string {
	switch t {
	case PoolingCLS:
		return "cls"
	case PoolingLast:
		return "last"
	case PoolingRank:
		return "rank"
	default:
		return "mean"
	}
}

// encoderArchitectures embed whatever their metadata says: llama.cpp runs them without a KV
// cache and they have no language-model head.
var encoderArchitectures = map[string]bool{
	"bert": true, "nomic-bert": true, "nomic-bert-moe": true, "neo-bert": true,
	"jina-bert-v2": true, "jina-bert-v3": true,
}

// EmbeddingFacts is what a GGUF header says about a model that embeds.
type EmbeddingFacts struct {
	// Pooling is <arch>.pooling_type (PoolingNone when absent).
	Pooling int
	// Length is the size of the pooled vectors: <arch>.embedding_length, or for a rank
	// head (PoolingRank) the number of scores (<arch>.classifier.output_labels, else 1).
	Length int
}

// Embedding reports whether the model embeds, and how: it has a pooling type
// (<arch>.pooling_type, the key Ollama goes by) or an encoder architecture such as BERT.
func (f *File) Embedding() (EmbeddingFacts, bool) {
	arch := f.Architecture()
	pooling, hasPooling := f.Uint(arch + ".pooling_type")
	if !hasPooling && !encoderArchitectures[arch] {
		return EmbeddingFacts{}, false
	}
	facts := EmbeddingFacts{Pooling: PoolingNone}
	if hasPooling && pooling <= PoolingRank {
		facts.Pooling = int(pooling)
	}
	if n, ok := f.Uint(arch + ".embedding_length"); ok && n <= math.MaxInt32 {
		facts.Length = int(n)
	}
	if facts.Pooling == PoolingRank {
		facts.Length = 1
		if labels, ok := f.Strings(arch + ".classifier.output_labels"); ok && len(labels) > 0 {
			facts.Length = len(labels)
		}
	}
	return facts, true
}
