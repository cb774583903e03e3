package app

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
)

// weatherToolAnthropic is a custom tool with one required string property.
var weatherToolAnthropic = anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
	Name: "get_weather", Description: anthropic.String("The weather in a city"),
	InputSchema: anthropic.ToolInputSchemaParam{
		Properties: map[string]any{"city": map[string]any{"type": "string", "maxLength": 12}}, Required: []string{"city"},
	},
}}

// anthropicCity decodes a tool_use input and checks it matches weatherToolAnthropic's schema:
// an object with a string city.
func anthropicCity(t *testing.T, input json.RawMessage) string {
	t.Helper()
	var v map[string]json.RawMessage
	if err := json.Unmarshal(input, &v); err != nil {
		t.Fatalf("input %s is not an object: %v", input, err)
	}
	var city string
	if err := json.Unmarshal(v["city"], &city); err != nil {
		t.Fatalf("input %s has no string city: %v", input, err)
	}
	return city
}

// onlyToolUse returns the reply's one tool_use block, failing unless there is exactly one.
func onlyToolUse(t *testing.T, msg *anthropic.Message) anthropic.ToolUseBlock {
	t.Helper()
	var uses []anthropic.ToolUseBlock
	for _, b := range msg.Content {
		if b.Type == "tool_use" {
			uses = append(uses, b.AsToolUse())
		}
	}
	if len(uses) != 1 {
		t.Fatalf("want one tool_use block: %s", msg.RawJSON())
	}
	return uses[0]
}

// TestAnthropicToolUseEndToEnd: through anthropic-sdk-go on the real engine, tool_choice any
// gets a tool_use block whose input matches the schema even from stories260K (a grammar forces
// the call); the streamed reply reassembles (Message.Accumulate) into the same call at
// temperature 0 and a fixed seed; then the tool_result goes back and the model answers.
func TestAnthropicToolUseEndToEnd(t *testing.T) {
	_, srv := startServer(t, toolConfig(t), true)
	client := anthropic.NewClient(aoption.WithBaseURL(srv.URL), aoption.WithAPIKey("x"), aoption.WithMaxRetries(0))
	ctx := context.Background()
	// Greedy and seeded: the SDK has no temperature field any more, and seed is an extension.
	opts := []aoption.RequestOption{aoption.WithJSONSet("temperature", 0), aoption.WithJSONSet("seed", 7)}
	params := anthropic.MessageNewParams{
		Model: anthropic.Model(modelID(testModel)), MaxTokens: 80,
		Tools:      []anthropic.ToolUnionParam{weatherToolAnthropic},
		ToolChoice: anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{DisableParallelToolUse: anthropic.Bool(true)}},
		Messages:   []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What is the weather in Oslo?"))},
	}
	msg, err := client.Messages.New(ctx, params, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != anthropic.StopReasonToolUse {
		t.Fatalf("stop_reason %q: %s", msg.StopReason, msg.RawJSON())
	}
	use := onlyToolUse(t, msg)
	city := anthropicCity(t, use.Input)
	if use.Name != "get_weather" || len(use.ID) <= len("toolu_") || use.ID[:len("toolu_")] != "toolu_" {
		t.Errorf("tool_use %s", msg.RawJSON())
	}
	t.Logf("tool_use %s %s(%s)", use.ID, use.Name, use.Input)

	stream := client.Messages.NewStreaming(ctx, params, opts...)
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.StopReason != anthropic.StopReasonToolUse {
		t.Fatalf("streamed stop_reason %q: %s", acc.StopReason, acc.RawJSON())
	}
	streamed := onlyToolUse(t, &acc)
	var a, b bytes.Buffer
	_ = json.Compact(&a, use.Input)
	_ = json.Compact(&b, streamed.Input)
	if streamed.Name != use.Name || a.String() != b.String() || anthropicCity(t, streamed.Input) != city {
		t.Errorf("streamed %s(%s), non-streamed %s(%s)", streamed.Name, streamed.Input, use.Name, use.Input)
	}

	// Step two: the call and its result as history; the model answers in text.
	params.ToolChoice = anthropic.ToolChoiceUnionParam{OfNone: &anthropic.ToolChoiceNoneParam{}}
	params.Messages = append(params.Messages, msg.ToParam(),
		anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, "Sunny and warm.", false)))
	final, err := client.Messages.New(ctx, params, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if final.StopReason != anthropic.StopReasonEndTurn && final.StopReason != anthropic.StopReasonMaxTokens {
		t.Errorf("final stop_reason %q", final.StopReason)
	}
	if len(final.Content) != 1 || final.Content[0].Type != "text" {
		t.Errorf("final answer %s, want one text block", final.RawJSON())
	}
	t.Logf("final answer %q", final.Content[0].Text)
	if final.Usage.InputTokens+final.Usage.CacheReadInputTokens <= msg.Usage.InputTokens+msg.Usage.CacheReadInputTokens {
		t.Errorf("the second prompt (%d tokens) should hold the first (%d) and the call",
			final.Usage.InputTokens+final.Usage.CacheReadInputTokens, msg.Usage.InputTokens+msg.Usage.CacheReadInputTokens)
	}
}
