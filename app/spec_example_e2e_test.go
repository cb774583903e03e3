package app

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/superfluid/superfluid/runtime/models/hf/hftest"
)

// TestSpecFirstExample is the spec's opening example as a new user runs it, against a local
// Hub holding the repository with a -UD-Q4_K_M and a -Q8_0 file:
//
//	superfluid serve unsloth/Qwen3.8-27B-GGUF:UD-Q4_K_M
//	client.chat.completions.create(model="unsloth/Qwen3.8-27B-GGUF", messages=[...], max_tokens=32)
//
// The repository named without its quantization means the model serve pulled and loaded, also
// once the other quantization is pulled beside it; with both pulled and neither loaded nor
// named by serve, the request gets a 404 model_not_found that lists both.
func TestSpecFirstExample(t *testing.T) {
	const repo = "unsloth/Qwen3.8-27B-GGUF"
	const q4, q8 = "hf.co/" + repo + ":UD-Q4_K_M", "hf.co/" + repo + ":Q8_0"
	hub := hftest.New()
	defer hub.Close()
	stories, err := os.ReadFile(testModel)
	if err != nil {
		t.Fatal(err)
	}
	tiny, err := os.ReadFile(writeModels(t, t.TempDir(), 1)[0])
	if err != nil {
		t.Fatal(err)
	}
	hub.AddFile(repo, "Qwen3.8-27B-GGUF-UD-Q4_K_M.gguf", stories)
	hub.AddFile(repo, "Qwen3.8-27B-GGUF-Q8_0.gguf", tiny)

	cfg := testConfig(t, repo+":UD-Q4_K_M")
	cfg.HFEndpoint = hub.URL()
	var out bytes.Buffer
	if err := pullIfMissing(cfg, &out); err != nil { // what serve does first
		t.Fatalf("pull: %v\n%s", err, out.String())
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler())
	closed := false
	stop := func() {
		if !closed {
			closed = true
			srv.Close()
			a.Close()
		}
	}
	t.Cleanup(stop)

	ids := listedIDs(t, srv.URL)
	if !strings.Contains(ids, q4) || strings.Contains(ids, q8) {
		t.Fatalf("/v1/models lists %s; want %s and not %s", ids, q4, q8)
	}
	ask := func(model string) (*openai.ChatCompletion, error) {
		return sdk(srv.URL).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model:     model,
			Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello.")},
			MaxTokens: openai.Int(32),
		})
	}
	for _, name := range []string{repo, "hf.co/" + repo} {
		reply, err := ask(name)
		if err != nil {
			t.Fatalf("model=%q: %v", name, err)
		}
		if reply.Model != q4 || len(reply.Choices) != 1 || reply.Choices[0].Message.Content == "" || reply.Usage.CompletionTokens == 0 {
			t.Fatalf("model=%q: reply from %q: %+v", name, reply.Model, reply.Choices)
		}
	}

	// The other quantization pulled beside it: the bare name still means the loaded one.
	if _, err := a.Pull(context.Background(), repo+":Q8_0", &out); err != nil {
		t.Fatalf("pull Q8_0: %v\n%s", err, out.String())
	}
	if ids := listedIDs(t, srv.URL); !strings.Contains(ids, q8) {
		t.Fatalf("/v1/models lists %s after pulling %s", ids, q8)
	}
	reply, err := ask(repo)
	if err != nil || reply.Model != q4 {
		t.Fatalf("two quants, %s loaded: reply %v, %v", q4, reply, err)
	}
	if a.loaded(q8) {
		t.Errorf("%s was loaded for a request that meant %s", q8, q4)
	}
	reply, err = ask(q8) // each still answers to its own name
	if err != nil || reply.Model != q8 {
		t.Fatalf("model=%s: %v, %v", q8, reply, err)
	}
	stop()

	// A server started with no model, nothing loaded: the bare name is ambiguous.
	cfg.ModelPath = ""
	_, srv2 := startServer(t, cfg, false)
	_, err = sdk(srv2.URL).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: repo, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello.")}, MaxTokens: openai.Int(32),
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" ||
		!strings.Contains(apiErr.Message, q4) || !strings.Contains(apiErr.Message, q8) {
		t.Fatalf("ambiguous bare name: %v; want a 404 model_not_found listing %s and %s", err, q4, q8)
	}
}

// listedIDs is GET /v1/models's ids, comma-separated.
func listedIDs(t *testing.T, url string) string {
	t.Helper()
	page, err := sdk(url).Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	return strings.Join(ids, ",")
}
