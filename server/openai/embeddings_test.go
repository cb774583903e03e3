package openai_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
)

// embedServer serves three fakes: "embed" (8-float vectors, a 32-token window), "rank" (a
// reranker) and "gen" (a generation model).
func embedServer(t *testing.T) (*httptest.Server, *openai.Client) {
	t.Helper()
	tmpl, err := chat.Parse("")
	if err != nil {
		t.Fatal(err)
	}
	model := func(id string, e llm.Engine) *core.Model {
		return &core.Model{ID: id, Path: "/models/" + id + ".gguf", Engine: e, Template: tmpl, ContextLength: 32}
	}
	svc := core.New(core.Config{}, servertest.Store(t),
		model("embed", enginetest.NewEmbedder(32, 8, llm.PoolingMean)),
		model("rank", enginetest.NewEmbedder(32, 0, llm.PoolingRank)),
		model("gen", enginetest.New(32, "hello")))
	srv := httptest.NewServer(server.New(server.Config{}, svc))
	t.Cleanup(srv.Close)
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	return srv, &client
}

// TestEmbeddingsSDK: openai-go's Embeddings API with every input form.
func TestEmbeddingsSDK(t *testing.T) {
	_, client := embedServer(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		input openai.EmbeddingNewParamsInputUnion
		n     int
	}{
		{"string", openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hello")}, 1},
		{"strings", openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"hello", "world", "hello"}}, 3},
		{"token ids", openai.EmbeddingNewParamsInputUnion{OfArrayOfTokens: []int64{10, 20, 30}}, 1},
		{"arrays of token ids", openai.EmbeddingNewParamsInputUnion{OfArrayOfTokenArrays: [][]int64{{10, 20}, {30}}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "embed", Input: tc.input})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Data) != tc.n || res.Object != "list" || res.Model != "embed" || res.Usage.PromptTokens < int64(tc.n) ||
				res.Usage.TotalTokens != res.Usage.PromptTokens {
				t.Fatalf("response %s", res.RawJSON())
			}
			for i, d := range res.Data {
				if d.Index != int64(i) || len(d.Embedding) != 8 || d.Object != "embedding" {
					t.Fatalf("datum %d: %s", i, d.RawJSON())
				}
			}
			if tc.n == 3 && (!slices.Equal(res.Data[0].Embedding, res.Data[2].Embedding) || slices.Equal(res.Data[0].Embedding, res.Data[1].Embedding)) {
				t.Errorf("equal inputs must give equal vectors, different ones different vectors: %s", res.RawJSON())
			}
		})
	}
	// dimensions equal to the model's size is served.
	if _, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "embed", Dimensions: openai.Int(8),
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hello")}}); err != nil {
		t.Errorf("dimensions 8: %v", err)
	}
}

// TestEmbeddingsBase64: encoding_format base64 is the little-endian float32 bytes of the vector.
func TestEmbeddingsBase64(t *testing.T) {
	srv, _ := embedServer(t)
	vectors := map[string][]float32{}
	for _, format := range []string{"float", "base64"} {
		resp, body := servertest.Do(t, "POST", srv.URL+"/v1/embeddings", fmt.Sprintf(`{"model":"embed","input":"hello","encoding_format":%q}`, format))
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", format, resp.StatusCode, body)
		}
		var out struct {
			Data []struct {
				Embedding json.RawMessage `json:"embedding"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatal(err)
		}
		var v []float32
		if format == "float" {
			if err := json.Unmarshal(out.Data[0].Embedding, &v); err != nil {
				t.Fatal(err)
			}
		} else {
			var s string
			if err := json.Unmarshal(out.Data[0].Embedding, &s); err != nil {
				t.Fatalf("base64 embedding is not a string: %s", out.Data[0].Embedding)
			}
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil || len(b) != 32 {
				t.Fatalf("base64 %q: %v", s, err)
			}
			for i := 0; i < len(b); i += 4 {
				v = append(v, math.Float32frombits(binary.LittleEndian.Uint32(b[i:])))
			}
		}
		vectors[format] = v
	}
	if !slices.Equal(vectors["float"], vectors["base64"]) {
		t.Errorf("float %v, base64 %v", vectors["float"], vectors["base64"])
	}
}

// TestEmbeddingsBadInput: each bad request gets OpenAI's error shape and status, never a 500.
func TestEmbeddingsBadInput(t *testing.T) {
	srv, _ := embedServer(t)
	many := make([]string, 10000)
	for i := range many {
		many[i] = fmt.Sprintf("text %d", i)
	}
	manyJSON, _ := json.Marshal(many)
	for _, tc := range []struct {
		name, path, body string
		status           int
		code, param      string
	}{
		{"generation model", "/v1/embeddings", `{"model":"gen","input":"hi"}`, 400, "unsupported_model", "model"},
		{"reranker", "/v1/embeddings", `{"model":"rank","input":"hi"}`, 400, "unsupported_model", "model"},
		{"unknown model", "/v1/embeddings", `{"model":"nope","input":"hi"}`, 404, "model_not_found", "model"},
		{"no model", "/v1/embeddings", `{"input":"hi"}`, 400, "", "model"},
		{"no input", "/v1/embeddings", `{"model":"embed"}`, 400, "", "input"},
		{"empty string", "/v1/embeddings", `{"model":"embed","input":""}`, 400, "", "input"},
		{"empty array", "/v1/embeddings", `{"model":"embed","input":[]}`, 400, "", "input"},
		{"empty string in an array", "/v1/embeddings", `{"model":"embed","input":["a",""]}`, 400, "", "input"},
		{"empty token array", "/v1/embeddings", `{"model":"embed","input":[[1],[]]}`, 400, "", "input"},
		{"10,000 strings", "/v1/embeddings", `{"model":"embed","input":` + string(manyJSON) + `}`, 400, "", "input"},
		{"token outside the vocabulary", "/v1/embeddings", `{"model":"embed","input":[5, 300]}`, 400, "", "input"},
		{"negative token", "/v1/embeddings", `{"model":"embed","input":[[5, -1]]}`, 400, "", "input"},
		{"fractional token", "/v1/embeddings", `{"model":"embed","input":[5, 1.5]}`, 400, "", "input"},
		{"strings and tokens mixed", "/v1/embeddings", `{"model":"embed","input":["a",[1]]}`, 400, "", "input"},
		{"input of the wrong type", "/v1/embeddings", `{"model":"embed","input":{"text":"a"}}`, 400, "", "input"},
		{"longer than the window", "/v1/embeddings", `{"model":"embed","input":"` + strings.Repeat("long ", 20) + `"}`, 400, "context_length_exceeded", "input"},
		{"far longer than the window", "/v1/embeddings", `{"model":"embed","input":"` + strings.Repeat("x", 100000) + `"}`, 400, "context_length_exceeded", "input"},
		{"dimensions differ", "/v1/embeddings", `{"model":"embed","input":"hi","dimensions":4}`, 400, "", "dimensions"},
		{"dimensions zero", "/v1/embeddings", `{"model":"embed","input":"hi","dimensions":0}`, 400, "", "dimensions"},
		{"unknown encoding", "/v1/embeddings", `{"model":"embed","input":"hi","encoding_format":"int8"}`, 400, "", "encoding_format"},
		{"chat on an embedding model", "/v1/chat/completions", `{"model":"embed","messages":[{"role":"user","content":"hi"}]}`, 400, "unsupported_model", "model"},
		{"completion on an embedding model", "/v1/completions", `{"model":"embed","prompt":"hi"}`, 400, "unsupported_model", "model"},
		{"rerank on a generation model", "/v1/rerank", `{"model":"gen","query":"q","documents":["a"]}`, 400, "unsupported_model", "model"},
		{"rerank without documents", "/v1/rerank", `{"model":"rank","query":"q","documents":[]}`, 400, "", "documents"},
		{"rerank without query", "/v1/rerank", `{"model":"rank","documents":["a"]}`, 400, "", "query"},
		{"rerank top_n zero", "/v1/rerank", `{"model":"rank","query":"q","documents":["a"],"top_n":0}`, 400, "", "top_n"},
		{"rerank document of the wrong type", "/v1/rerank", `{"model":"rank","query":"q","documents":[1]}`, 400, "", "documents"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := servertest.Do(t, "POST", srv.URL+tc.path, tc.body)
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Code    *string `json:"code"`
					Param   *string `json:"param"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != tc.status || e.Error.Message == "" {
				t.Fatalf("status %d body %.300s; want %d", resp.StatusCode, body, tc.status)
			}
			if code := deref(e.Error.Code); code != tc.code {
				t.Errorf("code %q, want %q (%s)", code, tc.code, e.Error.Message)
			}
			if param := deref(e.Error.Param); param != tc.param {
				t.Errorf("param %q, want %q (%s)", param, tc.param, e.Error.Message)
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

type rerankReply struct {
	Model   string `json:"model"`
	Object  string `json:"object"`
	Results []struct {
		Index          int                    `json:"index"`
		RelevanceScore float64                `json:"relevance_score"`
		Document       *struct{ Text string } `json:"document"`
	} `json:"results"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// TestRerank: results sorted by relevance, top_n, return_documents and both document forms,
// on a reranker and on an embedding model (cosine similarity).
func TestRerank(t *testing.T) {
	srv, _ := embedServer(t)
	for _, tc := range []struct {
		name, body string
		order      []int
		documents  bool
	}{
		{"reranker", `{"model":"rank","query":"the cat sat","documents":["zzz","a cat","the cat sat"]}`, []int{2, 1, 0}, false},
		{"top_n", `{"model":"rank","query":"the cat sat","documents":["zzz","a cat","the cat sat"],"top_n":1}`, []int{2}, false},
		{"documents as objects, returned", `{"model":"rank","query":"the cat sat","documents":[{"text":"zzz"},{"text":"the cat sat"}],"return_documents":true}`, []int{1, 0}, true},
		{"embedding model", `{"model":"embed","query":"the cat sat","documents":["qqq","the cat sat"],"top_n":5}`, []int{1, 0}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := servertest.Do(t, "POST", srv.URL+"/v1/rerank", tc.body)
			var out rerankReply
			if err := json.Unmarshal(body, &out); err != nil || resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			var order []int
			for i, r := range out.Results {
				order = append(order, r.Index)
				if i > 0 && r.RelevanceScore > out.Results[i-1].RelevanceScore {
					t.Errorf("not sorted: %s", body)
				}
				if (r.Document != nil) != tc.documents {
					t.Errorf("document %+v, want one: %v", r.Document, tc.documents)
				}
			}
			if !slices.Equal(order, tc.order) || out.Object != "list" || out.Usage.PromptTokens == 0 || out.Usage.TotalTokens != out.Usage.PromptTokens {
				t.Errorf("order %v, want %v: %s", order, tc.order, body)
			}
			if tc.documents && out.Results[0].Document.Text != "the cat sat" {
				t.Errorf("document %+v", out.Results[0].Document)
			}
		})
	}
}

// TestModelsListEmbeddingCapabilities: an embedding model is not offered for chat.
func TestModelsListEmbeddingCapabilities(t *testing.T) {
	srv, _ := embedServer(t)
	_, body := servertest.Do(t, "GET", srv.URL+"/v1/models", "")
	var out struct {
		Data []struct {
			ID           string         `json:"id"`
			Capabilities map[string]any `json:"capabilities"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	want := map[string][4]bool{ // chat, completion, embedding, rerank
		"embed": {false, false, true, true}, "rank": {false, false, false, true}, "gen": {true, true, false, false},
	}
	for _, m := range out.Data {
		c := m.Capabilities
		got := [4]bool{c["chat"] == true, c["completion"] == true, c["embedding"] == true, c["rerank"] == true}
		if got != want[m.ID] {
			t.Errorf("%s: chat, completion, embedding, rerank = %v, want %v", m.ID, got, want[m.ID])
		}
	}
}

// TestBatchEmbeddings: /v1/embeddings batch lines run through the same handler; a bad line goes
// to the error file with the status the endpoint answers.
func TestBatchEmbeddings(t *testing.T) {
	f := setupFiles(t, filesConfig{engine: enginetest.NewEmbedder(4096, 8, llm.PoolingMean)})
	in := f.uploadBatch(t,
		`{"custom_id":"good","method":"POST","url":"/v1/embeddings","body":{"model":"fake","input":["hi","there"]}}`,
		`{"custom_id":"empty","method":"POST","url":"/v1/embeddings","body":{"model":"fake","input":""}}`)
	b, err := f.client.Batches.New(context.Background(), openai.BatchNewParams{InputFileID: in,
		Endpoint: openai.BatchNewParamsEndpointV1Embeddings, CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	if err != nil {
		t.Fatal(err)
	}
	b = f.waitBatch(t, b.ID)
	out, errs := f.readLines(t, b.OutputFileID), f.readLines(t, b.ErrorFileID)
	if b.Status != openai.BatchStatusCompleted || b.RequestCounts.Completed != 1 || b.RequestCounts.Failed != 1 || len(out) != 1 || len(errs) != 1 {
		t.Fatalf("batch %s, output %+v, errors %+v", b.RawJSON(), out, errs)
	}
	var res openai.CreateEmbeddingResponse
	if err := json.Unmarshal(out[0].Response.Body, &res); err != nil || out[0].CustomID != "good" || len(res.Data) != 2 || len(res.Data[1].Embedding) != 8 {
		t.Errorf("output line %s: %v", out[0].Response.Body, err)
	}
	if errs[0].CustomID != "empty" || errs[0].Response == nil || errs[0].Response.StatusCode != 400 {
		t.Errorf("error line %+v", errs[0])
	}
	if b.Usage.InputTokens != res.Usage.PromptTokens || b.Usage.InputTokens == 0 {
		t.Errorf("batch usage %d input tokens, the line used %d", b.Usage.InputTokens, res.Usage.PromptTokens)
	}
}
