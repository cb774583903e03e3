package ollama_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
)

// embedFixture serves "embed" (a fake embedding model: 8 floats, a 32-token window, loaded
// on demand) and "gen" (a generation model) to the official client.
func embedFixture(t *testing.T) (*httptest.Server, *api.Client, *engine) {
	t.Helper()
	tmpl, err := chat.Parse("")
	if err != nil {
		t.Fatal(err)
	}
	emb := &engine{Engine: enginetest.NewEmbedder(32, 8, llm.PoolingMean)}
	svc := core.New(core.Config{}, servertest.Store(t),
		&core.Model{ID: "embed", Path: "/models/embed.gguf", Engine: emb, Template: tmpl, ContextLength: 32},
		&core.Model{ID: "gen", Path: "/models/gen.gguf", Engine: &engine{Engine: enginetest.New(32, "hi")}, Template: tmpl, ContextLength: 32})
	srv := httptest.NewServer(server.New(server.Config{}, svc))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return srv, api.NewClient(u, http.DefaultClient), emb
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// TestEmbedClient: the official client's Embed, as Ollama answers it: unit vectors, dimensions
// cutting and renormalizing, a count of prompt tokens, and an empty input that loads the model.
func TestEmbedClient(t *testing.T) {
	_, client, emb := embedFixture(t)
	ctx := context.Background()
	res, err := client.Embed(ctx, &api.EmbedRequest{Model: "embed", Input: []string{"hello", "world", "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Embeddings) != 3 || res.Model != "embed" || res.PromptEvalCount != 18 || res.TotalDuration <= 0 {
		t.Fatalf("response %+v", res)
	}
	for i, v := range res.Embeddings {
		if len(v) != 8 || math.Abs(norm(v)-1) > 1e-6 {
			t.Errorf("vector %d: %d floats of norm %v, want 8 of norm 1", i, len(v), norm(v))
		}
	}
	if !slices.Equal(res.Embeddings[0], res.Embeddings[2]) || slices.Equal(res.Embeddings[0], res.Embeddings[1]) {
		t.Errorf("equal inputs must give equal vectors, different ones different vectors: %v", res.Embeddings)
	}
	one, err := client.Embed(ctx, &api.EmbedRequest{Model: "embed:latest", Input: "hello", Dimensions: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Embeddings) != 1 || len(one.Embeddings[0]) != 3 || math.Abs(norm(one.Embeddings[0])-1) > 1e-6 || one.Model != "embed:latest" {
		t.Errorf("dimensions 3: %+v", one)
	}
	if all, err := client.Embed(ctx, &api.EmbedRequest{Model: "embed", Input: "hello", Dimensions: 100}); err != nil || len(all.Embeddings[0]) != 8 {
		t.Errorf("dimensions past the size are ignored, as in Ollama: %+v, %v", all, err)
	}
	// Ollama truncates by default; truncate false refuses the long input.
	long := strings.Repeat("long ", 20)
	if _, err := client.Embed(ctx, &api.EmbedRequest{Model: "embed", Input: long}); err != nil {
		t.Errorf("long input, truncated: %v", err)
	}
	var se api.StatusError
	if _, err := client.Embed(ctx, &api.EmbedRequest{Model: "embed", Input: long, Truncate: new(bool)}); !errors.As(err, &se) || se.StatusCode != 400 {
		t.Errorf("long input, truncate false: %v, want a 400", err)
	}
	// 10,000 inputs are served (Ollama sets no bound).
	many := make([]string, 10000)
	for i := range many {
		many[i] = fmt.Sprintf("text %d", i)
	}
	big, err := client.Embed(ctx, &api.EmbedRequest{Model: "embed", Input: many})
	if err != nil || len(big.Embeddings) != len(many) {
		t.Fatalf("10,000 inputs: %v", err)
	}
	if got := emb.EmbedRequests(); len(got) == 0 || got[len(got)-1].Inputs[0].Text != "text 0" {
		t.Errorf("the engine saw %d requests", len(got))
	}
}

// TestEmbeddingsClient: the legacy /api/embeddings answers the engine's vector, not normalized.
func TestEmbeddingsClient(t *testing.T) {
	_, client, _ := embedFixture(t)
	ctx := context.Background()
	res, err := client.Embeddings(ctx, &api.EmbeddingRequest{Model: "embed", Prompt: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := enginetest.NewEmbedder(32, 8, llm.PoolingMean).Embed(ctx, &llm.EmbedRequest{Inputs: []llm.EmbedInput{{Text: "hello"}}})
	if len(res.Embedding) != 8 {
		t.Fatalf("embedding %v", res.Embedding)
	}
	for i, x := range res.Embedding {
		if x != float64(want.Vectors[0][i]) {
			t.Fatalf("embedding %v, want the engine's %v", res.Embedding, want.Vectors[0])
		}
	}
	if empty, err := client.Embeddings(ctx, &api.EmbeddingRequest{Model: "embed"}); err != nil || empty.Embedding == nil || len(empty.Embedding) != 0 {
		t.Errorf("empty prompt: %+v, %v; want [] (the model loads)", empty, err)
	}
}

// TestEmbedBadInput: Ollama's error shape and status for each bad request.
func TestEmbedBadInput(t *testing.T) {
	srv, _, emb := embedFixture(t)
	for _, tc := range []struct {
		name, path, body string
		status           int
		message          string
	}{
		{"generation model", "/api/embed", `{"model":"gen","input":"hi"}`, 400, `"gen" does not support embeddings`},
		{"generation model, legacy", "/api/embeddings", `{"model":"gen","prompt":"hi"}`, 400, `"gen" does not support embeddings`},
		{"generation model, empty input", "/api/embed", `{"model":"gen"}`, 400, `"gen" does not support embeddings`},
		{"unknown model", "/api/embed", `{"model":"nope","input":"hi"}`, 404, `model "nope" not found`},
		{"no model", "/api/embed", `{"input":"hi"}`, 400, "model is required"},
		{"input of numbers", "/api/embed", `{"model":"embed","input":[1,2]}`, 400, "invalid input type"},
		{"input an object", "/api/embed", `{"model":"embed","input":{"a":1}}`, 400, "invalid input type"},
		{"long prompt, legacy", "/api/embeddings", `{"model":"embed","prompt":"` + strings.Repeat("long ", 20) + `"}`, 400, "context window"},
		{"bad keep_alive", "/api/embed", `{"model":"embed","input":"hi","keep_alive":"5x"}`, 400, "invalid keep_alive"},
		{"chat on an embedding model", "/api/chat", `{"model":"embed","messages":[{"role":"user","content":"hi"}],"stream":false}`, 400, "embedding model"},
		{"generate on an embedding model", "/api/generate", `{"model":"embed","prompt":"hi","stream":false}`, 400, "embedding model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := servertest.Do(t, "POST", srv.URL+tc.path, tc.body)
			var e struct {
				Error string `json:"error"`
			}
			if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != tc.status || !strings.Contains(e.Error, tc.message) {
				t.Fatalf("status %d body %s; want %d with %q", resp.StatusCode, body, tc.status, tc.message)
			}
		})
	}
	for _, body := range []string{`{"model":"embed"}`, `{"model":"embed","input":""}`, `{"model":"embed","input":[]}`} {
		resp, out := servertest.Do(t, "POST", srv.URL+"/api/embed", body)
		if resp.StatusCode != 200 || !strings.Contains(string(out), `"embeddings":[]`) {
			t.Errorf("%s: %d %s; want 200 with no embeddings", body, resp.StatusCode, out)
		}
	}
	if !emb.Loaded() {
		t.Error("an empty /api/embed did not load the model")
	}
}

// TestShowEmbeddingCapability: /api/show lists "embedding" alone for an embedding model.
func TestShowEmbeddingCapability(t *testing.T) {
	_, client, _ := embedFixture(t)
	show, err := client.Show(context.Background(), &api.ShowRequest{Model: "embed"})
	if err != nil {
		t.Fatal(err)
	}
	if len(show.Capabilities) != 1 || show.Capabilities[0] != "embedding" {
		t.Errorf("capabilities %v", show.Capabilities)
	}
}
