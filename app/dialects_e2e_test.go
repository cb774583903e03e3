package app

import (
	"context"
	"net/url"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	ollama "github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
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
// worker: events in order, text assembled, token counts as asked.
func TestStreamingDialectsRealEngine(t *testing.T) {
	_, srv := startServer(t, testConfig(t, testModel), true)
	ctx := context.Background()
	model := modelID(testModel)

	an := anthropic.NewClient(aoption.WithBaseURL(srv.URL), aoption.WithAPIKey("x"), aoption.WithMaxRetries(0))
	stream := an.Messages.NewStreaming(ctx, anthropic.MessageNewParams{
		Model: anthropic.Model(model), MaxTokens: 12,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Once upon a time"))},
	}, aoption.WithJSONSet("ignore_eos", true))
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
	if events < 6 || len(msg.Content) != 1 || msg.Content[0].Text == "" || msg.Usage.OutputTokens < 1 || msg.Usage.OutputTokens > 12 {
		t.Fatalf("%d events, message %+v", events, msg)
	}

	base, _ := url.Parse(srv.URL)
	ol := ollama.NewClient(base, srv.Client())
	var chunks []ollama.ChatResponse
	err := ol.Chat(ctx, &ollama.ChatRequest{
		Model: model + ":latest", Options: map[string]any{"num_predict": 16},
		Messages: []ollama.Message{{Role: "user", Content: "Once upon a time"}},
	}, func(r ollama.ChatResponse) error { chunks = append(chunks, r); return nil })
	if err != nil {
		t.Fatal(err)
	}
	last := chunks[len(chunks)-1]
	text := ""
	for _, c := range chunks {
		text += c.Message.Content
	}
	if len(chunks) < 2 || !last.Done || last.DoneReason == "" || text == "" || last.Metrics.EvalCount < 1 || last.Metrics.EvalCount > 16 {
		t.Fatalf("%d chunks, last %+v, text %q", len(chunks), last, text)
	}
}
