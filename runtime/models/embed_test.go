package models

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

// TestDescribeEmbeddingModel: an embedding model's facts say so, and its one capability is
// embedding; a generation model has no embedding facts.
func TestDescribeEmbeddingModel(t *testing.T) {
	dir := t.TempDir()
	bert := filepath.Join(dir, "bert.gguf")
	if err := gguftest.WriteTinyBERT(bert, gguftest.TinyBERTOptions{Pooling: "cls"}); err != nil {
		t.Fatal(err)
	}
	facts, err := Describe(bert)
	if err != nil {
		t.Fatal(err)
	}
	if facts.Embedding == nil || facts.Embedding.Pooling != "cls" || facts.Embedding.Length != 32 ||
		!slices.Equal(facts.Capabilities, []string{"embedding"}) || facts.Architecture != "bert" {
		t.Errorf("bert facts %+v (embedding %+v)", facts, facts.Embedding)
	}
	llama := filepath.Join(dir, "llama.gguf")
	if err := gguftest.WriteTinyLlama(llama, gguftest.TinyLlamaOptions{}); err != nil {
		t.Fatal(err)
	}
	if facts, err := Describe(llama); err != nil || facts.Embedding != nil || !slices.Contains(facts.Capabilities, "completion") {
		t.Errorf("llama facts %+v, %v", facts, err)
	}
}
