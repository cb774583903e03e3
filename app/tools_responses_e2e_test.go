package app

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// cityFunction is cityTool as a Responses API function tool.
var cityFunction = responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
	Name: "get_weather", Description: openai.String("The weather in a city"), Strict: openai.Bool(true),
	Parameters: map[string]any{
		"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string", "maxLength": 12}}, "required": []string{"city"},
	},
}}

// onlyCall returns the response's one output item, which must be a function call.
func onlyCall(t *testing.T, r *responses.Response) responses.ResponseFunctionToolCall {
	t.Helper()
	if r.Status != "completed" || len(r.Output) != 1 || r.Output[0].Type != "function_call" {
		t.Fatalf("status %s, output %s", r.Status, r.RawJSON())
	}
	call := r.Output[0].AsFunctionCall()
	if call.Name != "get_weather" || call.CallID == "" || !strings.HasPrefix(call.ID, "fc_") || call.Status != "completed" {
		t.Fatalf("call %+v", call)
	}
	return call
}

// TestResponsesToolCallEndToEnd: through the Responses API on the real worker, tool_choice
// required gets a parsable function_call from stories260K; streamed, the arguments deltas
// reassemble into the same arguments; the call's output sent back with previous_response_id
// gets a final message; and after a restart on the same data directory the same second step,
// its chain read back from SQLite, gets the same prompt and the same answer.
func TestResponsesToolCallEndToEnd(t *testing.T) {
	cfg := toolConfig(t)
	a, srv := startServer(t, cfg, true)
	client := sdk(srv.URL)
	ctx := context.Background()
	model := modelID(testModel)
	seed := option.WithJSONSet("seed", 7) // an extension; at temperature 0 it only pins the choice
	params := responses.ResponseNewParams{
		Model: model, Temperature: openai.Float(0), MaxOutputTokens: openai.Int(60), ParallelToolCalls: openai.Bool(false),
		Tools:      []responses.ToolUnionParam{cityFunction},
		ToolChoice: responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: openai.Opt(responses.ToolChoiceOptionsRequired)},
		Input:      responses.ResponseNewParamsInputUnion{OfString: openai.String("What is the weather in Oslo?")},
	}
	first, err := client.Responses.New(ctx, params, seed)
	if err != nil {
		t.Fatal(err)
	}
	call := onlyCall(t, first)
	city := cityArgs(t, call.Arguments)
	t.Logf("call %s(%s)", call.Name, call.Arguments)

	stream := client.Responses.NewStreaming(ctx, params, seed)
	var args strings.Builder
	var final responses.Response
	for stream.Next() {
		switch ev := stream.Current(); ev.Type {
		case "response.function_call_arguments.delta":
			args.WriteString(ev.Delta)
		case "response.completed", "response.incomplete":
			final = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	streamed := onlyCall(t, &final)
	if args.String() != call.Arguments || streamed.Arguments != call.Arguments || cityArgs(t, args.String()) != city {
		t.Errorf("streamed arguments: deltas %q, final %q; not streamed %q", args.String(), streamed.Arguments, call.Arguments)
	}

	// Step two: the call's output, continuing the first response; the model answers in text.
	result := responses.ResponseInputItemParamOfFunctionCallOutput("Sunny and warm.")
	result.OfFunctionCallOutput.CallID = openai.String(call.CallID)
	next := responses.ResponseNewParams{
		Model: model, Temperature: openai.Float(0), MaxOutputTokens: openai.Int(24), PreviousResponseID: openai.String(first.ID),
		Tools:      params.Tools,
		ToolChoice: responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: openai.Opt(responses.ToolChoiceOptionsNone)},
		Input:      responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{result}},
	}
	answer, err := client.Responses.New(ctx, next, seed)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("final answer %q (%s)", answer.OutputText(), answer.Status)
	if len(answer.Output) != 1 || answer.Output[0].Type != "message" || answer.OutputText() == "" {
		t.Fatalf("final answer %s", answer.RawJSON())
	}
	if answer.Usage.InputTokens <= first.Usage.InputTokens {
		t.Errorf("the second prompt (%d tokens) should hold the first (%d), the call and its output", answer.Usage.InputTokens, first.Usage.InputTokens)
	}
	srv.Close()
	a.Close()

	// The same step after a restart: the chain comes from the database.
	_, srv2 := startServer(t, cfg, true)
	client2 := sdk(srv2.URL)
	got, err := client2.Responses.Get(ctx, first.ID, responses.ResponseGetParams{})
	if err != nil || onlyCall(t, got).Arguments != call.Arguments {
		t.Fatalf("GET after restart: %v", err)
	}
	again, err := client2.Responses.New(ctx, next, seed)
	if err != nil {
		t.Fatalf("continue after restart: %v", err)
	}
	if again.Usage.InputTokens != answer.Usage.InputTokens || again.OutputText() != answer.OutputText() {
		t.Errorf("after restart: %d input tokens, answer %q; before: %d, %q",
			again.Usage.InputTokens, again.OutputText(), answer.Usage.InputTokens, answer.OutputText())
	}
}
