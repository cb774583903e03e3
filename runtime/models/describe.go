package models

import (
	"errors"
	"fmt"
	"os"
	"regexp"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/llm"
)

// Facts is what a model's GGUF header says, read by the strict reader before the model is
// registered or a worker starts.
type Facts struct {
	Architecture   string
	ParameterCount int64
	Quantization   string
	ContextLength  int
	Capabilities   []string
	// Size is the bytes on disk of every part; WeightBytes the tensor data of every part.
	Size, WeightBytes int64
	// KVBytesPerToken is the f16 K and V cache one token of context takes in every layer.
	KVBytesPerToken int64
	// Parts are the files of a split model in order (the path itself when not split).
	Parts []string
	// Embedding is set for a model that embeds (gguf.File.Embedding); nil for one that
	// generates.
	Embedding *llm.Embedding
	// Adapter reports whether the file is a LoRA adapter (general.type "adapter"), not a model.
	Adapter bool
	// Vision and Audio report what the model's projector (Record.Projector) encodes;
	// ProjectorBytes is its file's size, loaded beside the weights. ProjectorErr says why the
	// projector cannot be read (then neither is set).
	Vision, Audio  bool
	ProjectorBytes int64
	ProjectorErr   error
}

// ErrNotModel means a file is not a usable GGUF model (not GGUF, truncated, or invalid).
var ErrNotModel = errors.New("not a usable GGUF model")

// splitName matches the first part of a split GGUF: NAME-00001-of-00003.gguf.
var splitName = regexp.MustCompile(`^(.*)-(\d{5})-of-(\d{5})\.gguf$`)

// Describe reads path's GGUF header (and those of its other parts when it is split) strictly.
func Describe(path string) (Facts, error) {
	parts, err := gguf.SplitParts(path)
	if err != nil {
		return Facts{}, err
	}
	var facts Facts
	facts.Parts = parts
	bytesByType := map[uint32]int64{}
	for i, part := range parts {
		st, err := os.Stat(part)
		if err != nil {
			return Facts{}, fmt.Errorf("model file %s: %w", part, err)
		}
		f, err := gguf.ReadFile(part)
		if err != nil {
			return Facts{}, fmt.Errorf("%w: %s: %v", ErrNotModel, part, err)
		}
		facts.Size += st.Size()
		for _, t := range f.Tensors {
			facts.ParameterCount += int64(t.Elements())
			facts.WeightBytes += t.Size
			bytesByType[t.Type] += t.Size
		}
		if i == 0 {
			if f.IsProjector() {
				return Facts{}, fmt.Errorf("%w: %s; add the model it belongs to (a projector beside it is found) or pass it with --mmproj",
					ErrIsProjector, part)
			}
			if f.IsAdapter() {
				if _, err := f.Adapter(); err != nil {
					return Facts{}, fmt.Errorf("%w: %s: %v", ErrNotModel, part, err)
				}
				facts.Adapter = true
			}
			facts.Architecture = f.Architecture()
			facts.ContextLength = f.ContextLength()
			facts.KVBytesPerToken = kvBytesPerToken(f)
			if !facts.Adapter {
				facts.Capabilities = capabilities(f)
			}
			if emb, ok := f.Embedding(); ok {
				facts.Embedding = &llm.Embedding{Pooling: gguf.PoolingName(emb.Pooling), Length: emb.Length}
			}
			facts.Quantization = Quantization(f, nil)
		}
	}
	if facts.Quantization == "" {
		facts.Quantization = dominantType(bytesByType)
	}
	if facts.Architecture == "" {
		return Facts{}, fmt.Errorf("%w: %s has no general.architecture", ErrNotModel, path)
	}
	if facts.WeightBytes == 0 {
		return Facts{}, fmt.Errorf("%w: %s has no weights (a vocabulary-only file cannot generate)", ErrNotModel, path)
	}
	return facts, nil
}

// kvBytesPerToken is 2 (K and V) × layers × the K/V width × 2 bytes (f16).
func kvBytesPerToken(f *gguf.File) int64 {
	arch := f.Architecture()
	num := func(key string) int64 {
		v, _ := f.Uint(arch + "." + key)
		return int64(v)
	}
	layers, embd, heads := num("block_count"), num("embedding_length"), num("attention.head_count")
	kvHeads := num("attention.head_count_kv")
	if kvHeads == 0 {
		kvHeads = heads
	}
	keyLen, valLen := num("attention.key_length"), num("attention.value_length")
	if heads > 0 && keyLen == 0 {
		keyLen = embd / heads
	}
	if heads > 0 && valLen == 0 {
		valLen = embd / heads
	}
	return layers * kvHeads * (keyLen + valLen) * 2
}

// capabilities are Ollama's names for what the model can do: an embedding model embeds and
// does nothing else.
func capabilities(f *gguf.File) []string {
	if _, ok := f.Embedding(); ok {
		return []string{"embedding"}
	}
	caps := []string{"completion"}
	if _, ok := f.FIMTokens(); ok {
		caps = append(caps, "insert")
	}
	return caps
}

// fileTypes are llama.cpp's llama_ftype names, by general.file_type.
var fileTypes = map[uint64]string{
	0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K", 11: "Q3_K_S",
	12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K",
	19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL",
	26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16",
	36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4",
}

// Quantization names a file's quantization: general.file_type, else the tensor type holding the
// most bytes.
func Quantization(f *gguf.File, bytesByType map[uint32]int64) string {
	if ft, ok := f.Uint("general.file_type"); ok {
		if name, ok := fileTypes[ft]; ok {
			return name
		}
	}
	if bytesByType == nil {
		bytesByType = map[uint32]int64{}
		for _, t := range f.Tensors {
			bytesByType[t.Type] += t.Size
		}
	}
	return dominantType(bytesByType)
}

func dominantType(bytesByType map[uint32]int64) string {
	var best uint32
	var most int64 = -1
	for t, n := range bytesByType {
		if n > most || n == most && t < best {
			best, most = t, n
		}
	}
	if most < 0 {
		return ""
	}
	return gguf.TypeName(best)
}
