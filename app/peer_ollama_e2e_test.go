package app

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/superfluid/superfluid/app/peertest"
)

// TestPeerOllamaClients: the real Ollama server app/peertest runs (the pinned release, built by
// make peers) answers the official ollama/api client on its native API and openai-go on its /v1,
// streaming and not, from the model created out of ../shared/models' stories260K. This is the
// peer team mode's forwarding tests use as an upstream.
func TestPeerOllamaClients(t *testing.T) {
	peer := peertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base, err := url.Parse(peer.URL)
	if err != nil {
		t.Fatal(err)
	}
	native := ollama.NewClient(base, http.DefaultClient)
	for _, stream := range []bool{false, true} {
		req := &ollama.ChatRequest{
			Model:    peer.Model,
			Messages: []ollama.Message{{Role: "user", Content: "Once upon a time, there was a little dog"}},
			Stream:   &stream,
			Options:  map[string]any{"num_predict": 16, "temperature": 0},
		}
		var text strings.Builder
		var last ollama.ChatResponse
		chunks := 0
		err := native.Chat(ctx, req, func(r ollama.ChatResponse) error {
			chunks++
			text.WriteString(r.Message.Content)
			last = r
			return nil
		})
		if err != nil {
			t.Fatalf("ollama chat (stream %v): %v\n%s", stream, err, peer.LogTail(30))
		}
		if text.Len() == 0 || !last.Done || last.EvalCount < 1 || last.EvalCount > 16 {
			t.Fatalf("ollama chat (stream %v): %q, last %+v", stream, text.String(), last)
		}
		if stream && chunks < 2 {
			t.Fatalf("ollama chat streamed %d chunks", chunks)
		}
	}

	client := openai.NewClient(option.WithBaseURL(peer.OpenAI()), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	params := storyParamsFor(peer.Model, 16)
	reply, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatalf("openai chat: %v\n%s", err, peer.LogTail(30))
	}
	if len(reply.Choices) != 1 || reply.Choices[0].Message.Content == "" || reply.Usage.CompletionTokens < 1 {
		t.Fatalf("openai chat: %+v", reply)
	}
	stream := client.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("openai stream: %v", err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content == "" {
		t.Fatalf("openai stream: %+v", acc.ChatCompletion)
	}
	models, err := client.Models.List(ctx)
	if err != nil || len(models.Data) != 1 || models.Data[0].ID != peer.Model {
		t.Fatalf("openai models: %v %+v", err, models)
	}
}

// TestPeerOllamaTagsShape: superfluid's own Ollama dialect lists a model in /api/tags with the
// same fields, of the same JSON kinds, as the real server, and describes the same GGUF file
// (stories260K) with the same format and family.
func TestPeerOllamaTagsShape(t *testing.T) {
	dir, why := peertest.SharedModels()
	if dir == "" {
		t.Skip(why)
	}
	peer := peertest.Start(t)
	_, srv := startServer(t, testConfig(t, filepath.Join(dir, "stories260K.gguf")), false)
	theirs, ours := firstTag(t, peer.URL), firstTag(t, srv.URL)
	if a, b := kinds(theirs), kinds(ours); !reflect.DeepEqual(a, b) {
		t.Errorf("/api/tags model fields differ:\n ollama     %v\n superfluid %v", a, b)
	}
	td, _ := theirs["details"].(map[string]any)
	od, _ := ours["details"].(map[string]any)
	if a, b := kinds(td), kinds(od); !reflect.DeepEqual(a, b) {
		t.Errorf("/api/tags details fields differ:\n ollama     %v\n superfluid %v", a, b)
	}
	// Not quantization_level: stories260K has no general.file_type, which Ollama reads as
	// "unknown" while superfluid names the tensors' type (F32).
	for _, k := range []string{"format", "family", "families"} {
		if !reflect.DeepEqual(td[k], od[k]) {
			t.Errorf("details.%s: ollama %v, superfluid %v", k, td[k], od[k])
		}
	}
}

// firstTag is the first model /api/tags at base lists, as decoded JSON.
func firstTag(t *testing.T, base string) map[string]any {
	t.Helper()
	resp, err := http.Get(base + "/api/tags")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tags struct{ Models []map[string]any }
	if err := json.NewDecoder(resp.Body).Decode(&tags); err != nil || len(tags.Models) == 0 {
		t.Fatalf("%s/api/tags: %s %v %+v", base, resp.Status, err, tags)
	}
	return tags.Models[0]
}

// kinds lists an object's fields as "name:kind" (string, number, bool, array, object, null).
func kinds(m map[string]any) []string {
	var out []string
	for k, v := range m {
		kind := "null"
		switch v.(type) {
		case string:
			kind = "string"
		case float64:
			kind = "number"
		case bool:
			kind = "bool"
		case []any:
			kind = "array"
		case map[string]any:
			kind = "object"
		}
		out = append(out, k+":"+kind)
	}
	sort.Strings(out)
	return out
}
