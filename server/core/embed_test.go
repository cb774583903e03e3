package core

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/store"
)

func embedModel(t *testing.T, id string, e llm.Engine) *Model {
	m := fakeModel(t, e)
	m.ID = id
	return m
}

func texts(ss ...string) []llm.EmbedInput {
	var in []llm.EmbedInput
	for _, s := range ss {
		in = append(in, llm.EmbedInput{Text: s})
	}
	return in
}

// TestEmbed: vectors in input order, usage, and what is refused.
func TestEmbed(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "db.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc := New(Config{}, st,
		embedModel(t, "embed", enginetest.NewEmbedder(16, 4, llm.PoolingMean)),
		embedModel(t, "rank", enginetest.NewEmbedder(16, 0, llm.PoolingRank)),
		embedModel(t, "gen", enginetest.New(16, "hi")))
	ctx := context.Background()
	res, err := svc.Embed(ctx, &EmbedRequest{ID: "emb-1", Endpoint: "/v1/embeddings", Model: "embed", Inputs: texts("ab", "cd", "ab")})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Vectors) != 3 || !slices.Equal(res.Vectors[0], res.Vectors[2]) || slices.Equal(res.Vectors[0], res.Vectors[1]) || res.PromptTokens != 9 {
		t.Fatalf("result %+v", res)
	}
	for _, tc := range []struct {
		name string
		req  EmbedRequest
		want error
	}{
		{"generation model", EmbedRequest{Model: "gen", Inputs: texts("a")}, llm.ErrUnsupportedModel},
		{"reranker", EmbedRequest{Model: "rank", Inputs: texts("a")}, llm.ErrUnsupportedModel},
		{"no inputs", EmbedRequest{Model: "embed"}, llm.ErrInvalidInput},
		{"dimensions differ", EmbedRequest{Model: "embed", Inputs: texts("a"), Dimensions: 8}, &DimensionsError{}},
		{"dimensions agree", EmbedRequest{Model: "embed", Inputs: texts("a"), Dimensions: 4}, nil},
		{"longer than the window", EmbedRequest{Model: "embed", Inputs: texts(strings.Repeat("x", 20))}, llm.ErrContextLength},
		{"truncated", EmbedRequest{Model: "embed", Inputs: texts(strings.Repeat("x", 20)), Truncate: true}, nil},
		{"text far past the window, truncated", EmbedRequest{Model: "embed", Inputs: texts(strings.Repeat("é", 5000)), Truncate: true}, nil},
		{"unknown model", EmbedRequest{Model: "nope", Inputs: texts("a")}, llm.ErrModelNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.ID = "emb-" + tc.name
			_, err := svc.Embed(ctx, &tc.req)
			var de *DimensionsError
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("err = %v", err)
			case errors.As(tc.want, &de):
				if !errors.As(err, &de) || !errors.Is(err, llm.ErrInvalidInput) {
					t.Fatalf("err = %v, want a DimensionsError", err)
				}
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	// Generation on an embedding model is refused before the engine sees it.
	_, err = svc.Chat(ctx, &ChatRequest{ID: "chat-1", Model: "embed", Messages: userChat("hi").Messages}, func(int, llm.Event) error { return nil })
	if !errors.Is(err, llm.ErrUnsupportedModel) {
		t.Fatalf("chat on an embedding model: %v", err)
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rec, err := st.Request(ctx, "emb-1")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != 200 || rec.PromptTokens != 9 || rec.Endpoint != "/v1/embeddings" || rec.Model != "embed" {
		t.Errorf("record %+v", rec)
	}
	if rec, err := st.Request(ctx, "chat-1"); err != nil || rec.Status != 400 {
		t.Errorf("chat record %+v, %v", rec, err)
	}
}

// TestRerank: sorted by relevance, top_n, cosine on an embedding model and the rank head's
// scores on a reranker.
func TestRerank(t *testing.T) {
	svc := New(Config{}, nil,
		embedModel(t, "embed", enginetest.NewEmbedder(256, 16, llm.PoolingMean)),
		embedModel(t, "rank", enginetest.NewEmbedder(256, 0, llm.PoolingRank)),
		embedModel(t, "gen", enginetest.New(256, "hi")))
	ctx := context.Background()
	docs := []string{"zzz qqq", "the cat sat", "a cat", "cat"}
	for _, tc := range []struct {
		model string
		topN  int
		want  []int
	}{
		{"rank", 0, []int{1, 3, 2, 0}},   // the share of each document's words in the query; ties in order
		{"rank", 2, []int{1, 3}},         // cut to top_n
		{"embed", 1, []int{1}},           // cosine: "the cat sat" shares the most bytes
		{"embed", 10, []int{1, 2, 3, 0}}, // top_n past the documents keeps them all
	} {
		res, err := svc.Rerank(ctx, &RerankRequest{ID: "rerank-1", Model: tc.model, Query: "the cat sat", Documents: docs, TopN: tc.topN})
		if err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		var got []int
		for i, r := range res.Results {
			got = append(got, r.Index)
			if i > 0 && r.Score > res.Results[i-1].Score {
				t.Errorf("%s: not sorted: %+v", tc.model, res.Results)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s top %d: order %v, want %v (%+v)", tc.model, tc.topN, got, tc.want, res.Results)
		}
	}
	for _, tc := range []struct {
		name string
		req  RerankRequest
		want error
	}{
		{"generation model", RerankRequest{Model: "gen", Query: "q", Documents: docs}, llm.ErrUnsupportedModel},
		{"empty query", RerankRequest{Model: "rank", Documents: docs}, llm.ErrInvalidInput},
		{"no documents", RerankRequest{Model: "rank", Query: "q"}, llm.ErrInvalidInput},
		{"negative top_n", RerankRequest{Model: "rank", Query: "q", Documents: docs, TopN: -1}, llm.ErrInvalidInput},
	} {
		tc.req.ID = "rerank-" + tc.name
		if _, err := svc.Rerank(ctx, &tc.req); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestCutText(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 3, "hel"},
		{"héllo", 2, "h"}, // never half of é
		{"héllo", 3, "hé"},
		{"", 0, ""},
	} {
		if got := cutText(tc.s, tc.n); got != tc.want {
			t.Errorf("cutText(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
