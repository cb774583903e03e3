package app

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
)

// cityTool is a function with one required string argument.
var cityTool = openai.ChatCompletionToolUnionParam{OfFunction: &openai.ChatCompletionFunctionToolParam{Function: openai.FunctionDefinitionParam{
	Name: "get_weather", Description: openai.String("The weather in a city"),
	Parameters: openai.FunctionParameters{
		"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string", "maxLength": 12}}, "required": []string{"city"},
	},
}}}

// toolConfig is the test config with room for two tool turns: the test's own tiny model (when
// ../shared is absent) spends many more tokens on the tool instructions than stories260K.
func toolConfig(t *testing.T) Config {
	cfg := testConfig(t, testModel)
	cfg.ContextLength = 2048
	return cfg
}

// cityArgs decodes a call's arguments and checks they match cityTool's schema.
func cityArgs(t *testing.T, args string) string {
	t.Helper()
	var v struct {
		City *string `json:"city"`
	}
	if err := json.Unmarshal([]byte(args), &v); err != nil || v.City == nil {
		t.Fatalf("arguments %q do not match the schema: %v", args, err)
	}
	return *v.City
}

// TestOpenAIToolCallEndToEnd: tool_choice required gets a parsable call even from stories260K
// (a grammar forces it); the streamed call reassembles into the same arguments; the call and
// its result go back and the model answers in text.
func TestOpenAIToolCallEndToEnd(t *testing.T) {
	_, srv := startServer(t, toolConfig(t), true)
	client := sdk(srv.URL)
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model: modelID(testModel), Temperature: openai.Float(0), Seed: openai.Int(7), MaxTokens: openai.Int(60),
		Tools: []openai.ChatCompletionToolUnionParam{cityTool}, ParallelToolCalls: openai.Bool(false),
		ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")},
		Messages:   []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the weather in Oslo?")},
	}
	res, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	c := res.Choices[0]
	if c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].Function.Name != "get_weather" {
		t.Fatalf("finish %q, calls %+v, content %q", c.FinishReason, c.Message.ToolCalls, c.Message.Content)
	}
	call := c.Message.ToolCalls[0]
	city := cityArgs(t, call.Function.Arguments)
	t.Logf("call %s(%s)", call.Function.Name, call.Function.Arguments)

	stream := client.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	sc := acc.Choices[0]
	if sc.FinishReason != "tool_calls" || len(sc.Message.ToolCalls) != 1 {
		t.Fatalf("streamed: finish %q, calls %+v", sc.FinishReason, sc.Message.ToolCalls)
	}
	if got := cityArgs(t, sc.Message.ToolCalls[0].Function.Arguments); got != city || sc.Message.ToolCalls[0].Function.Name != call.Function.Name {
		t.Errorf("streamed call %s(%s), non-streamed %s(%s)", sc.Message.ToolCalls[0].Function.Name, sc.Message.ToolCalls[0].Function.Arguments, call.Function.Name, call.Function.Arguments)
	}

	// Step two: the call and its result as history; the model answers in text.
	params.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("none")}
	params.Messages = append(params.Messages, c.Message.ToParam(), openai.ToolMessage("Sunny and warm.", call.ID))
	final, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("final answer %q", final.Choices[0].Message.Content)
	if f := final.Choices[0]; f.Message.Content == "" || len(f.Message.ToolCalls) != 0 || (f.FinishReason != "stop" && f.FinishReason != "length") {
		t.Errorf("final answer %+v", f)
	}
	if final.Usage.PromptTokens <= res.Usage.PromptTokens {
		t.Errorf("the second prompt (%d tokens) should hold the first (%d) and the call", final.Usage.PromptTokens, res.Usage.PromptTokens)
	}
}

// TestOpenAILogprobsEndToEnd: at temperature 0 the chosen token is the most likely one.
func TestOpenAILogprobsEndToEnd(t *testing.T) {
	_, srv := startServer(t, testConfig(t, testModel), true)
	params := storyParams(16)
	params.Model = modelID(testModel)
	params.Logprobs, params.TopLogprobs = openai.Bool(true), openai.Int(5)
	res, err := sdk(srv.URL).Chat.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	lp := res.Choices[0].Logprobs.Content
	if len(lp) != int(res.Usage.CompletionTokens) || len(lp) == 0 {
		t.Fatalf("%d logprobs for %d tokens", len(lp), res.Usage.CompletionTokens)
	}
	var text []byte
	for _, tok := range lp {
		if len(tok.TopLogprobs) != 5 || tok.Logprob > 0 {
			t.Fatalf("token %+v", tok)
		}
		best := tok.TopLogprobs[0].Logprob
		for _, alt := range tok.TopLogprobs {
			if alt.Logprob > best {
				t.Errorf("top_logprobs not sorted: %+v", tok.TopLogprobs)
			}
		}
		if tok.Logprob < best-1e-6 {
			t.Errorf("chosen %q has logprob %g; the most likely %q has %g", tok.Token, tok.Logprob, tok.TopLogprobs[0].Token, best)
		}
		for _, b := range tok.Bytes {
			text = append(text, byte(b))
		}
	}
	// A character cut by the cap is U+FFFD in the content; its bytes are exact in the logprobs.
	if strings.ToValidUTF8(string(text), "\uFFFD") != res.Choices[0].Message.Content {
		t.Errorf("logprob bytes %q, content %q", text, res.Choices[0].Message.Content)
	}

	// logit_bias applies by token id; an id past the vocabulary is the client's mistake.
	params.LogitBias = map[string]int64{"99999": 5}
	_, err = sdk(srv.URL).Chat.Completions.New(context.Background(), params)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "outside the vocabulary") {
		t.Errorf("logit_bias past the vocabulary: %v", err)
	}
}
