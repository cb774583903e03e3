package gguftest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf"
)

// TestTinyBERT: the written model reads back strictly, and says it embeds as its pooling asks.
func TestTinyBERT(t *testing.T) {
	bge := filepath.Join("..", "..", "..", "shared", "models", "ggml-vocab-bert-bge.gguf")
	vocabs := []string{""}
	if _, err := os.Stat(bge); err == nil {
		vocabs = append(vocabs, bge)
	}
	for _, vocab := range vocabs {
		for _, tc := range []struct {
			pooling     string
			wantPooling int
			wantLength  int
			key         bool // bert.pooling_type is written
		}{
			{"", gguf.PoolingMean, 32, true},
			{"cls", gguf.PoolingCLS, 32, true},
			{"rank", gguf.PoolingRank, 1, true},
			{"none", gguf.PoolingNone, 32, false},
		} {
			path := filepath.Join(t.TempDir(), "bert.gguf")
			if err := WriteTinyBERT(path, TinyBERTOptions{VocabFrom: vocab, Pooling: tc.pooling}); err != nil {
				t.Fatalf("vocab %q pooling %q: %v", vocab, tc.pooling, err)
			}
			f, err := gguf.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			facts, ok := f.Embedding()
			if !ok || facts.Pooling != tc.wantPooling || facts.Length != tc.wantLength {
				t.Errorf("vocab %q pooling %q: Embedding() = %+v, %v", vocab, tc.pooling, facts, ok)
			}
			if _, has := f.Uint("bert.pooling_type"); has != tc.key {
				t.Errorf("pooling %q: pooling key written %v, want %v", tc.pooling, has, tc.key)
			}
			_, cls := f.Tensor("cls.output.weight")
			if cls != (tc.pooling == "rank") {
				t.Errorf("pooling %q: rank head %v", tc.pooling, cls)
			}
			if model, _ := f.String("tokenizer.ggml.model"); model != "bert" {
				t.Errorf("tokenizer %q", model)
			}
		}
	}
	if err := WriteTinyBERT(filepath.Join(t.TempDir(), "x.gguf"), TinyBERTOptions{Pooling: "max"}); err == nil {
		t.Error("an unknown pooling was written")
	}
}

// TestEmbeddingFacts: which headers say a model embeds.
func TestEmbeddingFacts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		kv     map[string]any
		embeds bool
		facts  gguf.EmbeddingFacts
	}{
		{"llama", map[string]any{"general.architecture": "llama", "llama.embedding_length": uint32(64)}, false, gguf.EmbeddingFacts{}},
		{"llama with a pooling type", map[string]any{"general.architecture": "qwen3", "qwen3.pooling_type": uint32(3), "qwen3.embedding_length": uint32(64)}, true, gguf.EmbeddingFacts{Pooling: gguf.PoolingLast, Length: 64}},
		{"bert without a pooling type", map[string]any{"general.architecture": "bert", "bert.embedding_length": uint32(384)}, true, gguf.EmbeddingFacts{Pooling: gguf.PoolingNone, Length: 384}},
		{"reranker with labels", map[string]any{"general.architecture": "bert", "bert.pooling_type": uint32(4), "bert.classifier.output_labels": []string{"a", "b"}}, true, gguf.EmbeddingFacts{Pooling: gguf.PoolingRank, Length: 2}},
		{"unknown pooling type", map[string]any{"general.architecture": "bert", "bert.pooling_type": uint32(9)}, true, gguf.EmbeddingFacts{Pooling: gguf.PoolingNone}},
	} {
		f := &gguf.File{KV: map[string]gguf.Value{}}
		for k, v := range tc.kv {
			val, ok := gguf.NewValue(v)
			if !ok {
				t.Fatalf("%s: value %v", tc.name, v)
			}
			f.KV[k] = val
		}
		facts, ok := f.Embedding()
		if ok != tc.embeds || facts != tc.facts {
			t.Errorf("%s: Embedding() = %+v, %v; want %+v, %v", tc.name, facts, ok, tc.facts, tc.embeds)
		}
	}
	if gguf.PoolingName(gguf.PoolingNone) != "mean" || gguf.PoolingName(gguf.PoolingRank) != "rank" || gguf.PoolingName(gguf.PoolingCLS) != "cls" || gguf.PoolingName(gguf.PoolingLast) != "last" {
		t.Error("PoolingName")
	}
}
