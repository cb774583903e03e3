package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	ollama "github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"

	"github.com/superfluid/superfluid/assets"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

// writeBERT writes a tiny random BERT embedding model (a 64-token window) with bge's WordPiece
// tokenizer from ../shared/models, or the writer's own vocabulary when that folder is absent.
func writeBERT(t *testing.T, name, pooling string) string {
	t.Helper()
	vocab := filepath.Join("..", "..", "shared", "models", "ggml-vocab-bert-bge.gguf")
	if _, err := os.Stat(vocab); err != nil {
		vocab = ""
	}
	path := filepath.Join(t.TempDir(), name+".gguf")
	if err := gguftest.WriteTinyBERT(path, gguftest.TinyBERTOptions{VocabFrom: vocab, Pooling: pooling, ContextLength: 64}); err != nil {
		t.Fatalf("write tiny bert: %v", err)
	}
	return path
}

// TestEmbeddingsEndToEnd: openai-go's Embeddings API and the Ollama client's Embed on a real
// worker running a BERT in llama.cpp: vectors of the model's size, equal for equal inputs and
// different for different ones, and the same vectors in both dialects (Ollama's normalized).
func TestEmbeddingsEndToEnd(t *testing.T) {
	model := writeBERT(t, "tiny-bert", "mean")
	_, srv := startServer(t, testConfig(t, model), true)
	client := sdk(srv.URL)
	ctx := context.Background()
	inputs := []string{"hello world", "the cat was happy", "hello world"}
	res, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: modelID(model),
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: inputs}})
	if err != nil {
		t.Fatalf("embeddings: %v", err)
	}
	if len(res.Data) != 3 || res.Usage.PromptTokens < 6 {
		t.Fatalf("response %s", res.RawJSON())
	}
	for i, d := range res.Data {
		if len(d.Embedding) != 32 || d.Index != int64(i) {
			t.Fatalf("datum %d has %d floats, want 32", i, len(d.Embedding))
		}
	}
	if !slices.Equal(res.Data[0].Embedding, res.Data[2].Embedding) {
		t.Errorf("equal inputs gave different vectors")
	}
	if slices.Equal(res.Data[0].Embedding, res.Data[1].Embedding) {
		t.Errorf("different inputs gave equal vectors")
	}
	// Token ids are embedded as they are: the ids of a text with its specials give its vector.
	tokens := tokenizeVia(t, srv.URL, modelID(model), "hello world")
	ids, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: modelID(model),
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokens: tokens}})
	if err != nil {
		t.Fatalf("token ids: %v", err)
	}
	if !slices.Equal(ids.Data[0].Embedding, res.Data[0].Embedding) {
		t.Errorf("token ids %v gave another vector than their text", tokens)
	}

	u, _ := url.Parse(srv.URL)
	oc := ollama.NewClient(u, http.DefaultClient)
	or, err := oc.Embed(ctx, &ollama.EmbedRequest{Model: modelID(model), Input: inputs})
	if err != nil {
		t.Fatalf("ollama embed: %v", err)
	}
	if len(or.Embeddings) != 3 || or.PromptEvalCount != int(res.Usage.PromptTokens) {
		t.Fatalf("ollama response %+v", or)
	}
	for i, v := range or.Embeddings {
		raw := res.Data[i].Embedding
		var n float64
		for _, x := range raw {
			n += x * x
		}
		n = math.Sqrt(n)
		for k := range v {
			if math.Abs(float64(v[k])-raw[k]/n) > 1e-5 {
				t.Fatalf("ollama vector %d is not the OpenAI vector normalized: %v vs %v", i, v, raw)
			}
		}
	}
}

// tokenizeVia returns the ids of text with the model's special tokens, from /v1/tokenize.
func tokenizeVia(t *testing.T, srv, model, text string) []int64 {
	t.Helper()
	body := fmt.Sprintf(`{"model":%q,"content":%q,"add_special":true}`, model, text)
	resp, err := http.Post(srv+"/v1/tokenize", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Tokens []int64 `json:"tokens"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Tokens) < 3 {
		t.Fatalf("tokenize: %v %+v", err, out)
	}
	return out.Tokens
}

// TestRerankEndToEnd: /v1/rerank on a real reranker (a BERT with a rank head) and on an
// embedding model (cosine similarity): every document once, sorted descending, top_n.
func TestRerankEndToEnd(t *testing.T) {
	for _, pooling := range []string{"rank", "mean"} {
		t.Run(pooling, func(t *testing.T) {
			model := writeBERT(t, "tiny-bert-"+pooling, pooling)
			_, srv := startServer(t, testConfig(t, model), true)
			docs := []string{"the cat was happy", "hello world", "a dog", "the cat", "water"}
			body := fmt.Sprintf(`{"model":%q,"query":"the happy cat","documents":%s,"return_documents":true}`, modelID(model), jsonOf(docs))
			var out struct {
				Results []struct {
					Index          int     `json:"index"`
					RelevanceScore float64 `json:"relevance_score"`
					Document       struct {
						Text string `json:"text"`
					} `json:"document"`
				} `json:"results"`
			}
			postJSON(t, srv.URL+"/v1/rerank", body, 200, &out)
			if len(out.Results) != len(docs) {
				t.Fatalf("%d results for %d documents", len(out.Results), len(docs))
			}
			seen := map[int]bool{}
			for i, r := range out.Results {
				if i > 0 && r.RelevanceScore > out.Results[i-1].RelevanceScore {
					t.Errorf("not sorted descending: %+v", out.Results)
				}
				if seen[r.Index] || r.Document.Text != docs[r.Index] {
					t.Errorf("result %+v", r)
				}
				seen[r.Index] = true
			}
			var top struct {
				Results []struct {
					Index int `json:"index"`
				} `json:"results"`
			}
			postJSON(t, srv.URL+"/v1/rerank", strings.Replace(body, `"return_documents":true`, `"top_n":2`, 1), 200, &top)
			if len(top.Results) != 2 || top.Results[0].Index != out.Results[0].Index || top.Results[1].Index != out.Results[1].Index {
				t.Errorf("top_n 2: %+v, want the first two of %+v", top.Results, out.Results)
			}
		})
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// postJSON posts body and decodes the reply into out, checking the status.
func postJSON(t *testing.T, url, body string, status int, out any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw := json.RawMessage{}
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		t.Fatalf("POST %s: status %d, body not JSON: %v", url, resp.StatusCode, err)
	}
	if resp.StatusCode != status {
		t.Fatalf("POST %s: status %d %.300s, want %d", url, resp.StatusCode, raw, status)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEmbeddingsBadInputEndToEnd: every bad embedding request is a 400 in OpenAI's shape from
// the real worker, which survives them all; 10,000 inputs are refused by the OpenAI dialect
// (its bound is 2,048) and served by Ollama's.
func TestEmbeddingsBadInputEndToEnd(t *testing.T) {
	model := writeBERT(t, "tiny-bert", "mean")
	a, srv := startServer(t, testConfig(t, model), true)
	pid := a.Worker().PID()
	id := modelID(model)
	many := make([]string, 10000)
	for i := range many {
		many[i] = fmt.Sprintf("story %d", i)
	}
	for _, tc := range []struct {
		name, path, body string
		code, param      string
	}{
		{"generation-only model", "/v1/embeddings", `{"model":"` + assets.BundledModelID + `","input":"hi"}`, "unsupported_model", "model"},
		{"10,000 strings", "/v1/embeddings", `{"model":"` + id + `","input":` + jsonOf(many) + `}`, "", "input"},
		{"empty input", "/v1/embeddings", `{"model":"` + id + `","input":""}`, "", "input"},
		{"empty array", "/v1/embeddings", `{"model":"` + id + `","input":[]}`, "", "input"},
		{"token ids outside the vocabulary", "/v1/embeddings", `{"model":"` + id + `","input":[101, 99999999]}`, "", "input"},
		{"dimensions mismatch", "/v1/embeddings", `{"model":"` + id + `","input":"hi","dimensions":16}`, "", "dimensions"},
		{"input longer than the context", "/v1/embeddings", `{"model":"` + id + `","input":"` + strings.Repeat("hello world ", 60) + `"}`, "context_length_exceeded", "input"},
		{"token ids longer than the context", "/v1/embeddings", `{"model":"` + id + `","input":` + jsonOf(slices.Repeat([]int{101}, 65)) + `}`, "context_length_exceeded", "input"},
		{"chat on the embedding model", "/v1/chat/completions", `{"model":"` + id + `","messages":[{"role":"user","content":"hi"}]}`, "unsupported_model", "model"},
		{"rerank on a generation-only model", "/v1/rerank", `{"model":"` + assets.BundledModelID + `","query":"q","documents":["a"]}`, "unsupported_model", "model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Code    *string `json:"code"`
					Param   *string `json:"param"`
				} `json:"error"`
			}
			postJSON(t, srv.URL+tc.path, tc.body, 400, &e)
			code, param := "", ""
			if e.Error.Code != nil {
				code = *e.Error.Code
			}
			if e.Error.Param != nil {
				param = *e.Error.Param
			}
			if code != tc.code || param != tc.param || e.Error.Message == "" {
				t.Errorf("code %q param %q (%s), want code %q param %q", code, param, e.Error.Message, tc.code, tc.param)
			}
		})
	}
	u, _ := url.Parse(srv.URL)
	oc := ollama.NewClient(u, http.DefaultClient)
	res, err := oc.Embed(context.Background(), &ollama.EmbedRequest{Model: id, Input: many})
	if err != nil || len(res.Embeddings) != len(many) || len(res.Embeddings[9999]) != 32 {
		t.Fatalf("ollama, 10,000 inputs: %v", err)
	}
	var se ollama.StatusError
	if _, err := oc.Embed(context.Background(), &ollama.EmbedRequest{Model: assets.BundledModelID, Input: "hi"}); !errors.As(err, &se) || se.StatusCode != 400 {
		t.Errorf("ollama on a generation-only model: %v, want a 400", err)
	}
	if got := a.Worker().PID(); got != pid {
		t.Errorf("the worker changed (pid %d, then %d): a bad input crashed it", pid, got)
	}
}
