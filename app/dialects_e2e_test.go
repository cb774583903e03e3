package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	ollama "github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

// TestConversationAcrossDialects: one conversation, started with the OpenAI SDK, continued
// with the Anthropic SDK and then the Ollama client on the same model, is served warm at each
// step: the whole previous prompt comes from the prefix cache.
func TestConversationAcrossDialects(t *testing.T) {
	_, srv := startServer(t, testConfig(t, testModel), true)
	ctx := context.Background()
	model := modelID(testModel)
	system := "You tell short stories."
	turns := []string{"Tell me about a dog.", "What did the dog find?", "How did the day end?"}

	// Turn 1, OpenAI: a conversation with one earlier exchange, so the transcript shape is set.
	oa := sdk(srv.URL)
	first, err := oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: model, MaxTokens: openai.Int(24), Temperature: openai.Float(0),
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage(system), openai.UserMessage("Hello."), openai.AssistantMessage("Hello! Shall I tell a story?"),
			openai.UserMessage(turns[0]),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	reply1 := first.Choices[0].Message.Content

	// Turn 2, Anthropic: the same history plus the reply and a new question.
	an := anthropic.NewClient(aoption.WithBaseURL(srv.URL), aoption.WithAPIKey("x"), aoption.WithMaxRetries(0))
	second, err := an.Messages.New(ctx, anthropic.MessageNewParams{
		Model: anthropic.Model(model), MaxTokens: 24, System: []anthropic.TextBlockParam{{Text: system}},
		Messages: []anthropic.MessageParam{
			anthropic.NewUserMessage(anthropic.NewTextBlock("Hello.")),
			anthropic.NewAssistantMessage(anthropic.NewTextBlock("Hello! Shall I tell a story?")),
			anthropic.NewUserMessage(anthropic.NewTextBlock(turns[0])),
			anthropic.NewAssistantMessage(anthropic.NewTextBlock(reply1)),
			anthropic.NewUserMessage(anthropic.NewTextBlock(turns[1])),
		},
	}, aoption.WithJSONSet("temperature", 0))
	if err != nil {
		t.Fatal(err)
	}
	if second.Usage.CacheReadInputTokens < first.Usage.PromptTokens {
		t.Fatalf("Anthropic turn read %d cached tokens; the OpenAI turn's whole prompt (%d) should be cached",
			second.Usage.CacheReadInputTokens, first.Usage.PromptTokens)
	}
	reply2 := ""
	for _, block := range second.Content {
		reply2 += block.Text
	}
	secondPrompt := int(second.Usage.InputTokens + second.Usage.CacheReadInputTokens)

	// Turn 3, Ollama.
	base, _ := url.Parse(srv.URL)
	ol := ollama.NewClient(base, srv.Client())
	stream := false
	var final ollama.ChatResponse
	err = ol.Chat(ctx, &ollama.ChatRequest{
		Model: model, Stream: &stream, Options: map[string]any{"temperature": 0, "num_predict": 24},
		Messages: []ollama.Message{
			{Role: "system", Content: system}, {Role: "user", Content: "Hello."}, {Role: "assistant", Content: "Hello! Shall I tell a story?"},
			{Role: "user", Content: turns[0]}, {Role: "assistant", Content: reply1},
			{Role: "user", Content: turns[1]}, {Role: "assistant", Content: reply2},
			{Role: "user", Content: turns[2]},
		},
	}, func(r ollama.ChatResponse) error { final = r; return nil })
	if err != nil {
		t.Fatal(err)
	}
	// prompt_eval_count counts only what was computed: the new turn, not the cached history.
	evaluated := final.Metrics.PromptEvalCount
	if evaluated <= 0 || evaluated >= secondPrompt/2 {
		t.Fatalf("Ollama turn evaluated %d prompt tokens; the previous prompt (%d tokens) should have come from the cache", evaluated, secondPrompt)
	}
	if final.Message.Content == "" || !final.Done {
		t.Fatalf("Ollama reply %+v", final)
	}
}

// TestResponsesChainAcrossRestart: previous_response_id continues a conversation warm, and
// still works after the server restarts on the same data directory.
func TestResponsesChainAcrossRestart(t *testing.T) {
	cfg := testConfig(t, testModel)
	model := modelID(testModel)
	ctx := context.Background()
	a, srv := startServer(t, cfg, true)
	client := sdk(srv.URL)
	first, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Model: model, Instructions: openai.String("You tell short stories."), MaxOutputTokens: openai.Int(20),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Tell me about a cat.")},
	})
	if err != nil {
		t.Fatal(err)
	}
	second, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Model: model, Instructions: openai.String("You tell short stories."), MaxOutputTokens: openai.Int(20),
		PreviousResponseID: openai.String(first.ID),
		Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("And then?")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if second.Usage.InputTokensDetails.CachedTokens == 0 {
		t.Fatalf("the chained response was not served warm: usage %+v", second.Usage)
	}
	srv.Close()
	a.Close()

	_, srv2 := startServer(t, cfg, true)
	client2 := openai.NewClient(option.WithBaseURL(srv2.URL+"/v1"), option.WithAPIKey("x"), option.WithMaxRetries(0))
	got, err := client2.Responses.Get(ctx, second.ID, responses.ResponseGetParams{})
	if err != nil || got.ID != second.ID || got.OutputText() != second.OutputText() {
		t.Fatalf("after restart: %v %+v", err, got)
	}
	third, err := client2.Responses.New(ctx, responses.ResponseNewParams{
		Model: model, MaxOutputTokens: openai.Int(8), PreviousResponseID: openai.String(second.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("The end?")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if third.Usage.InputTokens <= second.Usage.InputTokens || third.Status != "completed" && third.Status != "incomplete" {
		t.Fatalf("third turn input %d (second had %d), status %s", third.Usage.InputTokens, second.Usage.InputTokens, third.Status)
	}
}

// TestStreamingDialectsRealEngine: the Anthropic and Ollama clients stream from the real
// worker: events in order, text assembled, token counts as asked. The model is a copy of the
// test model in which the first token it picks for the prompt ends a generation, so without
// the ignore_eos extension a reply ends at once, and with it the reply runs to the cap exactly.
func TestStreamingDialectsRealEngine(t *testing.T) {
	a, srv := startServer(t, testConfig(t, testModel), true)
	ctx := context.Background()
	const prompt = "Once upon a time"
	model := endingAtOnce(t, a, srv.URL, prompt)

	an := anthropic.NewClient(aoption.WithBaseURL(srv.URL), aoption.WithAPIKey("x"), aoption.WithMaxRetries(0))
	for _, ignoreEOS := range []bool{false, true} {
		opts := []aoption.RequestOption{aoption.WithJSONSet("temperature", 0)}
		if ignoreEOS {
			opts = append(opts, aoption.WithJSONSet("ignore_eos", true))
		}
		stream := an.Messages.NewStreaming(ctx, anthropic.MessageNewParams{
			Model: anthropic.Model(model), MaxTokens: 12,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
		}, opts...)
		var msg anthropic.Message
		events := 0
		for stream.Next() {
			if err := msg.Accumulate(stream.Current()); err != nil {
				t.Fatal(err)
			}
			events++
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		switch {
		case !ignoreEOS && (msg.Usage.OutputTokens != 0 || msg.StopReason != anthropic.StopReasonEndTurn):
			t.Fatalf("without ignore_eos: %d output tokens, stop reason %q; want 0 and end_turn", msg.Usage.OutputTokens, msg.StopReason)
		case ignoreEOS && (events < 6 || len(msg.Content) != 1 || msg.Content[0].Text == "" ||
			msg.Usage.OutputTokens != 12 || msg.StopReason != anthropic.StopReasonMaxTokens):
			t.Fatalf("ignore_eos: %d events, %d blocks, %d output tokens, stop reason %q; want text, 12 output tokens and max_tokens",
				events, len(msg.Content), msg.Usage.OutputTokens, msg.StopReason)
		}
	}

	base, _ := url.Parse(srv.URL)
	ol := ollama.NewClient(base, srv.Client())
	for _, ignoreEOS := range []bool{false, true} {
		var chunks []ollama.ChatResponse
		err := ol.Chat(ctx, &ollama.ChatRequest{
			Model: model + ":latest", Options: map[string]any{"num_predict": 16, "temperature": 0, "ignore_eos": ignoreEOS},
			Messages: []ollama.Message{{Role: "user", Content: prompt}},
		}, func(r ollama.ChatResponse) error { chunks = append(chunks, r); return nil })
		if err != nil {
			t.Fatal(err)
		}
		last := chunks[len(chunks)-1]
		text := ""
		for _, c := range chunks {
			text += c.Message.Content
		}
		switch {
		case !ignoreEOS && (!last.Done || last.DoneReason != "stop" || last.Metrics.EvalCount != 0):
			t.Fatalf("without ignore_eos: last %+v; want done, stop and no tokens", last)
		case ignoreEOS && (len(chunks) < 2 || !last.Done || last.DoneReason != "length" || text == "" || last.Metrics.EvalCount != 16):
			t.Fatalf("ignore_eos: %d chunks, last %+v, text %q; want 16 tokens and length", len(chunks), last, text)
		}
	}
}

// endingAtOnce serves a copy of the test model in which the token the model picks first for
// prompt (greedy, after BOS) is an end-of-generation token, and returns its model id.
func endingAtOnce(t *testing.T, a *App, srv, prompt string) string {
	t.Helper()
	model := modelID(testModel)
	status, _, b := post(t, srv+"/v1/completions", fmt.Sprintf(`{"model":%q,"prompt":%q,"max_tokens":1,"temperature":0,"ignore_eos":true}`, model, prompt))
	var reply struct {
		Choices []struct{ Text string }
	}
	if err := json.Unmarshal(b, &reply); status != 200 || err != nil || len(reply.Choices) != 1 {
		t.Fatalf("completion: %d %s", status, b)
	}
	tokens := func(text string) []int {
		status, _, b := post(t, srv+"/v1/tokenize", fmt.Sprintf(`{"model":%q,"input":%q,"add_special":true}`, model, text))
		var out struct{ Tokens []int }
		if err := json.Unmarshal(b, &out); status != 200 || err != nil {
			t.Fatalf("tokenize: %d %s", status, b)
		}
		return out.Tokens
	}
	before, after := tokens(prompt), tokens(prompt+reply.Choices[0].Text)
	if len(after) != len(before)+1 || !slices.Equal(after[:len(before)], before) {
		t.Fatalf("cannot tell the first token of %q: the prompt is %v, with the reply %q %v", prompt, before, reply.Choices[0].Text, after)
	}
	path := filepath.Join(t.TempDir(), "ends.gguf")
	if err := copyWithEndToken(testModel, path, after[len(before)]); err != nil {
		t.Fatal(err)
	}
	e, err := a.Manager().Catalog().AddLocal(context.Background(), path, "")
	if err != nil {
		t.Fatal(err)
	}
	return e.ID
}

// copyWithEndToken writes a copy of the GGUF model at src to dst, with token id as its
// end-of-turn token (tokenizer.ggml.eot_token_id), which llama.cpp ends a generation on.
func copyWithEndToken(src, dst string, id int) error {
	f, err := gguf.ReadFile(src)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	const key = "tokenizer.ggml.eot_token_id"
	w := gguftest.NewWriter()
	for _, k := range f.Keys {
		if k != key {
			w.AddValue(k, f.KV[k])
		}
	}
	w.AddUint32(key, uint32(id))
	for _, ti := range f.Tensors {
		at := f.DataOffset + int64(ti.Offset)
		w.AddTensor(ti.Name, ti.Type, ti.Dims, data[at:at+ti.Size])
	}
	return w.WriteFile(dst)
}
