package enginetest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

func TestFakeEmbedder(t *testing.T) {
	ctx := context.Background()
	e := NewEmbedder(8, 4, llm.PoolingMean)
	res, err := e.Embed(ctx, &llm.EmbedRequest{Inputs: []llm.EmbedInput{{Text: "abc"}, {Text: "abc"}, {Text: "xyz"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Vectors[0]) != 4 || !slices.Equal(res.Vectors[0], res.Vectors[1]) || slices.Equal(res.Vectors[0], res.Vectors[2]) {
		t.Errorf("vectors %v", res.Vectors)
	}
	if res.PromptTokens() != 12 { // BOS + 3 bytes, three times
		t.Errorf("prompt tokens %d", res.PromptTokens())
	}
	for _, tc := range []struct {
		name string
		req  llm.EmbedRequest
		want error
	}{
		{"no inputs", llm.EmbedRequest{}, llm.ErrInvalidInput},
		{"token outside the vocabulary", llm.EmbedRequest{Inputs: []llm.EmbedInput{{Tokens: []int{258}}}}, llm.ErrInvalidInput},
		{"past the window", llm.EmbedRequest{Inputs: []llm.EmbedInput{{Text: "123456789"}}}, llm.ErrContextLength},
		{"truncated", llm.EmbedRequest{Inputs: []llm.EmbedInput{{Text: "123456789"}}, Truncate: true}, nil},
	} {
		if _, err := e.Embed(ctx, &tc.req); !errors.Is(err, tc.want) && (tc.want != nil || err != nil) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := run(t, e, &llm.Request{Prompt: "hi"}); !errors.Is(err, llm.ErrUnsupportedModel) {
		t.Errorf("Generate on an embedder: %v", err)
	}
	if _, err := New(8, "x").Embed(ctx, &llm.EmbedRequest{Inputs: []llm.EmbedInput{{Text: "a"}}}); !errors.Is(err, llm.ErrUnsupportedModel) {
		t.Errorf("Embed on a generator: %v", err)
	}
	rank := NewEmbedder(64, 0, llm.PoolingRank)
	scores, err := rank.Embed(ctx, &llm.EmbedRequest{Inputs: []llm.EmbedInput{{Text: "the cat", Pair: "a cat"}, {Text: "the cat", Pair: "a dog"}}})
	if err != nil {
		t.Fatal(err)
	}
	if scores.Vectors[0][0] <= scores.Vectors[1][0] || len(scores.Vectors[0]) != 1 {
		t.Errorf("rank scores %v", scores.Vectors)
	}
}
