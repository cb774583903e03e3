package llamacpp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
)

// bertVocab is the BERT tokenizer the embedding tests borrow: bge's from ../shared/models, or
// the tiny model's built-in vocabulary ("") on a fresh clone.
func bertVocab() string {
	p := filepath.Join(sharedModels, "ggml-vocab-bert-bge.gguf")
	if _, err := os.Stat(p); err != nil || *forceTiny {
		return ""
	}
	return p
}

// loadBERT writes a tiny BERT with pooling and loads it.
func loadBERT(t *testing.T, pooling string, ctx int) *Engine {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bert-"+pooling+".gguf")
	if err := gguftest.WriteTinyBERT(path, gguftest.TinyBERTOptions{VocabFrom: bertVocab(), Pooling: pooling, ContextLength: 128}); err != nil {
		t.Fatalf("write tiny bert: %v", err)
	}
	e, err := Load(Options{ModelPath: path, ContextLength: ctx, Parallel: 2})
	if err != nil {
		t.Fatalf("load tiny bert: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func embedTexts(e *Engine, truncate bool, texts ...string) (*llm.EmbedResult, error) {
	req := &llm.EmbedRequest{Truncate: truncate}
	for _, text := range texts {
		req.Inputs = append(req.Inputs, llm.EmbedInput{Text: text})
	}
	return e.Embed(context.Background(), req)
}

// TestEmbedPoolings: every pooling gives vectors of the model's size, equal for equal
// inputs and different for different ones, whether the inputs share a batch or not.
func TestEmbedPoolings(t *testing.T) {
	for _, tc := range []struct {
		pooling, want string
		length        int
	}{
		{"mean", llm.PoolingMean, 32},
		{"cls", llm.PoolingCLS, 32},
		{"none", llm.PoolingMean, 32}, // no pooling key: pooled here, by mean
		{"rank", llm.PoolingRank, 1},
	} {
		t.Run(tc.pooling, func(t *testing.T) {
			e := loadBERT(t, tc.pooling, 0)
			info := e.Info()
			if info.Embedding == nil || info.Embedding.Pooling != tc.want || info.Embedding.Length != tc.length {
				t.Fatalf("info.Embedding = %+v, want pooling %s length %d", info.Embedding, tc.want, tc.length)
			}
			if info.ContextLength != 128 {
				t.Errorf("context %d, want the trained 128", info.ContextLength)
			}
			res, err := embedTexts(e, false, "hello world", "the cat was happy", "hello world", "hello world and more")
			if err != nil {
				t.Fatalf("Embed: %v", err)
			}
			if len(res.Vectors) != 4 || len(res.Tokens) != 4 {
				t.Fatalf("%d vectors, %d token counts", len(res.Vectors), len(res.Tokens))
			}
			for i, v := range res.Vectors {
				if len(v) != tc.length {
					t.Fatalf("vector %d has %d floats, want %d", i, len(v), tc.length)
				}
			}
			if !slices.Equal(res.Vectors[0], res.Vectors[2]) {
				t.Errorf("equal inputs, different vectors:\n%v\n%v", res.Vectors[0], res.Vectors[2])
			}
			if slices.Equal(res.Vectors[0], res.Vectors[1]) || slices.Equal(res.Vectors[0], res.Vectors[3]) {
				t.Errorf("different inputs, equal vectors")
			}
			alone, err := embedTexts(e, false, "hello world")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(alone.Vectors[0], res.Vectors[0]) {
				t.Errorf("the same input alone and in a batch differ:\n%v\n%v", alone.Vectors[0], res.Vectors[0])
			}
		})
	}
}

// TestEmbedBadInput: what the engine refuses, and what it truncates.
func TestEmbedBadInput(t *testing.T) {
	e := loadBERT(t, "mean", 16)
	long := "hello world the cat was happy and the dog was happy too, said the little girl to the boy"
	vocab := e.Info().VocabSize
	for _, tc := range []struct {
		name   string
		req    llm.EmbedRequest
		want   error
		tokens int // expected length of the single input when it succeeds
	}{
		{"no inputs", llm.EmbedRequest{}, llm.ErrInvalidInput, 0},
		{"token past the vocabulary", llm.EmbedRequest{Inputs: []llm.EmbedInput{{Tokens: []int{5, vocab}}}}, llm.ErrInvalidInput, 0},
		{"negative token", llm.EmbedRequest{Inputs: []llm.EmbedInput{{Tokens: []int{-1}}}}, llm.ErrInvalidInput, 0},
		{"longer than the window", llm.EmbedRequest{Inputs: []llm.EmbedInput{{Text: long}}}, llm.ErrContextLength, 0},
		{"tokens longer than the window", llm.EmbedRequest{Inputs: []llm.EmbedInput{{Tokens: make([]int, 17)}}}, llm.ErrContextLength, 0},
		{"truncated", llm.EmbedRequest{Inputs: []llm.EmbedInput{{Text: long}}, Truncate: true}, nil, 16},
		{"tokens truncated", llm.EmbedRequest{Inputs: []llm.EmbedInput{{Tokens: make([]int, 40)}}, Truncate: true}, nil, 16},
		{"empty text has its specials", llm.EmbedRequest{Inputs: []llm.EmbedInput{{Text: ""}}}, nil, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := e.Embed(context.Background(), &tc.req)
			if tc.want != nil {
				if !errors.Is(err, tc.want) {
					t.Fatalf("err = %v, want %v", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Tokens[0] != tc.tokens || len(res.Vectors[0]) != 32 {
				t.Fatalf("%d tokens, %d floats; want %d tokens", res.Tokens[0], len(res.Vectors[0]), tc.tokens)
			}
		})
	}
	// A truncated text keeps its [SEP]: the same as the window's worth of text with it.
	full, _ := e.Tokenize(context.Background(), long, true, false)
	cut := append(append([]int{}, full[:15]...), full[len(full)-1])
	a, err := e.Embed(context.Background(), &llm.EmbedRequest{Inputs: []llm.EmbedInput{{Text: long}}, Truncate: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.Embed(context.Background(), &llm.EmbedRequest{Inputs: []llm.EmbedInput{{Tokens: cut}}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Vectors[0], b.Vectors[0]) {
		t.Errorf("truncation did not keep the trailing special token")
	}
	// Generation is refused, and the engine still embeds afterwards.
	if err := e.Generate(context.Background(), greedy("hello", 4), func(llm.Event) error { return nil }); !errors.Is(err, llm.ErrUnsupportedModel) {
		t.Errorf("Generate on an embedding model: %v, want ErrUnsupportedModel", err)
	}
	if _, err := embedTexts(e, false, "hello"); err != nil {
		t.Errorf("embed after the refusals: %v", err)
	}
}

// TestEmbedGenerationModel: a generation-only model does not embed.
func TestEmbedGenerationModel(t *testing.T) {
	if testEngine.Info().Embedding != nil {
		t.Fatalf("the generation model says it embeds: %+v", testEngine.Info().Embedding)
	}
	_, err := testEngine.Embed(context.Background(), &llm.EmbedRequest{Inputs: []llm.EmbedInput{{Text: "hello"}}})
	if !errors.Is(err, llm.ErrUnsupportedModel) || !errors.Is(err, llm.ErrInvalidInput) {
		t.Fatalf("err = %v, want ErrUnsupportedModel (an ErrInvalidInput)", err)
	}
}

// TestEmbedConcurrent: requests of many inputs and of one share the loop, each gets its own
// vectors, and a cancelled request ends without stopping the others.
func TestEmbedConcurrent(t *testing.T) {
	e := loadBERT(t, "mean", 0)
	texts := make([]string, 300)
	for i := range texts {
		texts[i] = fmt.Sprintf("story number %d of the little cat", i)
	}
	want, err := embedTexts(e, false, texts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Embed(ctx, &llm.EmbedRequest{Inputs: []llm.EmbedInput{{Text: "hello"}}}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled request: %v", err)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			i := w * 7
			got, err := embedTexts(e, false, texts[i], texts[i+1])
			if err != nil {
				t.Errorf("worker %d: %v", w, err)
				return
			}
			if !slices.Equal(got.Vectors[0], want.Vectors[i]) || !slices.Equal(got.Vectors[1], want.Vectors[i+1]) {
				t.Errorf("worker %d: vectors differ from the big request's", w)
			}
		}()
	}
	big, err := embedTexts(e, false, texts...)
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i := range texts {
		if !slices.Equal(big.Vectors[i], want.Vectors[i]) {
			t.Fatalf("input %d differs between runs", i)
		}
	}
}

// TestRankPairs: a rank head scores a pair, and the pair's order matters.
func TestRankPairs(t *testing.T) {
	e := loadBERT(t, "rank", 0)
	res, err := e.Embed(context.Background(), &llm.EmbedRequest{Inputs: []llm.EmbedInput{
		{Text: "the cat", Pair: "a happy cat"}, {Text: "the cat", Pair: "water"}, {Text: "the cat", Pair: "a happy cat"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	q, _ := e.Tokenize(context.Background(), "the cat", true, false)
	d, _ := e.Tokenize(context.Background(), "a happy cat", true, false)
	if res.Tokens[0] != len(q)+len(d)-1 {
		t.Errorf("pair of %d tokens, want %d + %d - 1 (the document's [CLS] dropped)", res.Tokens[0], len(q), len(d))
	}
	if res.Vectors[0][0] != res.Vectors[2][0] || res.Vectors[0][0] == res.Vectors[1][0] {
		t.Errorf("scores %v", res.Vectors)
	}
}
