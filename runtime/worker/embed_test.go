package worker

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
)

// TestEmbedThroughTheWorker: vectors cross the socket exactly, and so do the embed errors.
func TestEmbedThroughTheWorker(t *testing.T) {
	c, _ := started(t, "embed")
	if emb := c.Info().Embedding; emb == nil || emb.Length != 8 || emb.Pooling != llm.PoolingMean {
		t.Fatalf("Info().Embedding = %+v, want mean pooling of 8 floats", emb)
	}
	ctx := context.Background()
	req := &llm.EmbedRequest{Inputs: []llm.EmbedInput{{Text: "hello"}, {Tokens: []int{5, 6, 7}}, {Text: "hello"}}}
	got, err := c.Embed(ctx, req)
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	want, _ := enginetest.NewEmbedder(64, 8, llm.PoolingMean).Embed(ctx, req)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("through the worker %+v, in process %+v", got, want)
	}
	for _, tc := range []struct {
		name string
		req  llm.EmbedRequest
		want error
	}{
		{"context length", llm.EmbedRequest{Inputs: []llm.EmbedInput{{Text: strings.Repeat("x", 100)}}}, llm.ErrContextLength},
		{"token outside the vocabulary", llm.EmbedRequest{Inputs: []llm.EmbedInput{{Tokens: []int{1 << 20}}}}, llm.ErrInvalidInput},
		{"no inputs", llm.EmbedRequest{}, llm.ErrInvalidInput},
	} {
		if _, err := c.Embed(ctx, &tc.req); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	if err := c.Generate(ctx, &llm.Request{Prompt: "hi"}, func(llm.Event) error { return nil }); !errors.Is(err, llm.ErrUnsupportedModel) {
		t.Errorf("Generate on an embedding worker: %v, want ErrUnsupportedModel", err)
	}

	gen, _ := started(t, "ok")
	if _, err := gen.Embed(ctx, req); !errors.Is(err, llm.ErrUnsupportedModel) || !errors.Is(err, llm.ErrInvalidInput) {
		t.Errorf("Embed on a generation worker: %v, want ErrUnsupportedModel", err)
	}
}
