package app

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	ollama "github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

// loraClients greedily complete one prompt on the real engine through each official SDK, with
// the request's lora extension when lora is not nil.
type loraClients struct {
	srv   string
	model string
	oa    *openai.Client
	an    anthropic.Client
	ol    *ollama.Client
}

func newLoRAClients(srv, model string) *loraClients {
	base, _ := url.Parse(srv)
	return &loraClients{srv: srv, model: model, oa: sdk(srv),
		an: anthropic.NewClient(aoption.WithBaseURL(srv), aoption.WithAPIKey("x"), aoption.WithMaxRetries(0)),
		ol: ollama.NewClient(base, http.DefaultClient)}
}

const loraPrompt = "Once upon a time, there was a little dog"

// replies is the greedy reply of each dialect, in the order openai, anthropic, ollama.
func (c *loraClients) replies(t *testing.T, lora []map[string]any) [3]string {
	t.Helper()
	ctx := context.Background()
	var out [3]string
	var oopts []option.RequestOption
	var aopts []aoption.RequestOption
	oopts = append(oopts, option.WithJSONSet("temperature", 0))
	aopts = append(aopts, aoption.WithJSONSet("temperature", 0))
	olOptions := map[string]any{"temperature": 0, "num_predict": 16}
	if lora != nil {
		oopts = append(oopts, option.WithJSONSet("lora", lora))
		aopts = append(aopts, aoption.WithJSONSet("lora", lora))
		olOptions["lora"] = lora
	}
	r, err := c.oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: c.model, MaxTokens: openai.Int(16), Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(loraPrompt)},
	}, oopts...)
	if err != nil {
		t.Fatalf("openai: %v", err)
	}
	out[0] = r.Choices[0].Message.Content
	m, err := c.an.Messages.New(ctx, anthropic.MessageNewParams{
		Model: anthropic.Model(c.model), MaxTokens: 16, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(loraPrompt))},
	}, aopts...)
	if err != nil {
		t.Fatalf("anthropic: %v", err)
	}
	for _, b := range m.Content {
		out[1] += b.Text
	}
	stream := false
	err = c.ol.Chat(ctx, &ollama.ChatRequest{Model: c.model, Stream: &stream, Options: olOptions,
		Messages: []ollama.Message{{Role: "user", Content: loraPrompt}}}, func(r ollama.ChatResponse) error {
		out[2] += r.Message.Content
		return nil
	})
	if err != nil {
		t.Fatalf("ollama: %v", err)
	}
	return out
}

func (c *loraClients) post(t *testing.T, path string, body any) (int, string) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(c.srv+path, "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sb strings.Builder
	_, _ = io.Copy(&sb, resp.Body)
	return resp.StatusCode, sb.String()
}

// TestLoRAEndToEnd: on the real engine, a LoRA adapter loaded with /v1/lora/load changes every
// dialect's greedy reply (OpenAI, Anthropic and Ollama SDKs); per request, lora [] or the
// adapter at scale 0 gets the bare reply exactly beside it, and naming it the adapter's; after
// /v1/lora/unload the bare reply is back exactly and naming it is a 400, and loading it again
// (the worker freed it) gives the adapter's reply again. An adapter for another model's shape is refused at load naming both
// files, and changes nothing.
func TestLoRAEndToEnd(t *testing.T) {
	_, srv := startServer(t, testConfig(t, testModel), true)
	model := modelID(testModel)
	c := newLoRAClients(srv.URL, model)
	dir := t.TempDir()
	adapter := filepath.Join(dir, "style.gguf")
	if err := gguftest.WriteLoRA(adapter, testModel, gguftest.LoRAOptions{Seed: 7}); err != nil {
		t.Fatal(err)
	}
	bare := c.replies(t, nil)
	for i, r := range bare {
		if r == "" {
			t.Fatalf("dialect %d's bare reply is empty: %q", i, bare)
		}
	}

	if status, body := c.post(t, "/v1/lora/load", map[string]any{"model": model, "adapter": adapter}); status != 200 {
		t.Fatalf("load: %d %s", status, body)
	}
	with := c.replies(t, nil)
	t.Logf("bare %q\nwith the adapter %q", bare, with)
	for i, r := range with {
		if r == bare[i] {
			t.Fatalf("with the adapter loaded the replies are %q; bare %q", with, bare)
		}
	}
	// Per request (the lora extension, each SDK): none beside the loaded one is the bare model
	// exactly, as is the adapter at scale 0; naming it is the adapter's reply.
	if got := c.replies(t, []map[string]any{}); got != bare {
		t.Fatalf("lora [] beside a loaded adapter: %q, want the bare %q", got, bare)
	}
	if got := c.replies(t, []map[string]any{{"id": "style", "scale": 0}}); got != bare {
		t.Fatalf("the adapter at scale 0: %q, want the bare %q", got, bare)
	}
	if got := c.replies(t, []map[string]any{{"id": "style"}}); got != with {
		t.Fatalf("naming the adapter: %q, want %q", got, with)
	}
	if status, body := c.post(t, "/v1/lora/unload", map[string]any{"model": model, "id": "style"}); status != 200 {
		t.Fatalf("unload: %d %s", status, body)
	}
	if got := c.replies(t, nil); got != bare {
		t.Fatalf("after unload: %q, want the bare %q exactly", got, bare)
	}
	status, body := c.post(t, "/v1/chat/completions", map[string]any{"model": model, "lora": []map[string]any{{"id": "style"}},
		"messages": []map[string]any{{"role": "user", "content": "hi"}}})
	if status != 400 || !strings.Contains(body, `\"style\"`) || !strings.Contains(body, `"param":"lora"`) {
		t.Fatalf("naming an unloaded adapter: %d %s", status, body)
	}
	// The worker freed it at the unload; loaded again, it is read again and does the same.
	if status, body := c.post(t, "/v1/lora/load", map[string]any{"model": model, "adapter": adapter}); status != 200 {
		t.Fatalf("load again: %d %s", status, body)
	}
	if got := c.replies(t, nil); got != with {
		t.Fatalf("loaded again: %q, want %q", got, with)
	}
	if status, body := c.post(t, "/v1/lora/unload", map[string]any{"model": model}); status != 200 {
		t.Fatalf("unload all: %d %s", status, body)
	}
	other := filepath.Join(dir, "other.gguf")
	if err := gguftest.WriteTinyLlamaLoRA(other, gguftest.TinyLlamaOptions{Embd: 128}, gguftest.LoRAOptions{}); err != nil {
		t.Fatal(err)
	}
	status, body = c.post(t, "/v1/lora/load", map[string]any{"model": model, "adapter": other})
	if status != 400 || !strings.Contains(body, other) || !strings.Contains(body, filepath.Base(testModel)) {
		t.Fatalf("another model's adapter: %d %s; want a 400 naming both files", status, body)
	}
	if got := c.replies(t, nil); got != bare {
		t.Fatalf("after the refused load: %q", got)
	}
}
