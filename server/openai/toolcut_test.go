package openai_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/superfluid/superfluid/server/servertest"
)

// forcedCall is what a forced tool_choice's grammar has the model write.
const forcedCall = `{"name":"get_weather","arguments":{"city":"Oslo"}}`

func forcedParams(maxTokens int64) openai.ChatCompletionNewParams {
	p := toolParams("Weather in Oslo?")
	p.ToolChoice = openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_weather"})
	p.MaxTokens = openai.Int(maxTokens)
	return p
}

// TestChatForcedCallCut: a forced call cut by max_tokens comes back in tool_calls with the
// arguments it got and finish_reason length, streamed or not; never as content.
func TestChatForcedCallCut(t *testing.T) {
	cutAt := strings.Index(forcedCall, `"Oslo"`) + 3 // {"name":"get_weather","arguments":{"city":"Os
	tests := []struct {
		name string
		max  int64
		args string
	}{
		{"cut at 10 tokens, inside the name", 10, ""},
		{"cut inside the arguments", int64(cutAt), forcedCall[strings.Index(forcedCall, `{"city"`):cutAt]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t, config{template: servertest.ToolTemplate, reply: forcedCall})
			res, err := f.client.Chat.Completions.New(t.Context(), forcedParams(tt.max))
			if err != nil {
				t.Fatal(err)
			}
			c := res.Choices[0]
			if c.FinishReason != "length" || c.Message.Content != "" || len(c.Message.ToolCalls) != 1 {
				t.Fatalf("finish %q content %q calls %+v; want length, no content, one call", c.FinishReason, c.Message.Content, c.Message.ToolCalls)
			}
			call := c.Message.ToolCalls[0]
			if call.Function.Name != "get_weather" || call.Function.Arguments != tt.args || !strings.HasPrefix(call.ID, "call_") {
				t.Errorf("call %+v, want get_weather with arguments %q", call, tt.args)
			}
			if w := res.JSON.ExtraFields["superfluid"].Raw(); !strings.Contains(w, "cut the reply inside the call") {
				t.Errorf("superfluid %s, want the cut warning", w)
			}

			stream := f.client.Chat.Completions.NewStreaming(t.Context(), forcedParams(tt.max))
			var acc openai.ChatCompletionAccumulator
			for stream.Next() {
				acc.AddChunk(stream.Current())
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			sc := acc.Choices[0]
			if sc.FinishReason != "length" || sc.Message.Content != "" || len(sc.Message.ToolCalls) != 1 ||
				sc.Message.ToolCalls[0].Function.Arguments != tt.args || sc.Message.ToolCalls[0].Function.Name != "get_weather" {
				t.Errorf("streamed: finish %q content %q calls %+v", sc.FinishReason, sc.Message.Content, sc.Message.ToolCalls)
			}
		})
	}
}

// TestChatParallelCallsCut: with tool_choice required, the complete call comes back whole and
// the cut one with its partial arguments.
func TestChatParallelCallsCut(t *testing.T) {
	reply := `[{"name":"get_weather","arguments":{"city":"Oslo"}},{"name":"get_weather","arguments":{"city":"Bergen"}}]`
	cut := strings.Index(reply, "Bergen") + 2
	f := setup(t, config{template: servertest.ToolTemplate, reply: reply})
	p := toolParams("Weather in Oslo and Bergen?")
	p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}
	p.MaxTokens = openai.Int(int64(cut))
	res, err := f.client.Chat.Completions.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	c := res.Choices[0]
	if c.FinishReason != "length" || len(c.Message.ToolCalls) != 2 {
		t.Fatalf("finish %q calls %+v", c.FinishReason, c.Message.ToolCalls)
	}
	sameJSON(t, c.Message.ToolCalls[0].Function.Arguments, `{"city":"Oslo"}`)
	if got := c.Message.ToolCalls[1].Function.Arguments; got != `{"city":"Be` {
		t.Errorf("cut call arguments %q", got)
	}
}

// TestChatResponseFormatWithForcedCall: json_schema response_format beside tool_choice required
// is served (the official API accepts the pair): the call comes first.
func TestChatResponseFormatWithForcedCall(t *testing.T) {
	f := setup(t, config{template: servertest.ToolTemplate, reply: "[" + forcedCall + "]"})
	p := toolParams("Weather in Oslo?")
	p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}
	p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
		JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "answer", Schema: map[string]any{
			"type": "object", "properties": map[string]any{"summary": map[string]any{"type": "string"}}, "required": []string{"summary"},
		}},
	}}
	res, err := f.client.Chat.Completions.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Choices[0]; c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 {
		t.Fatalf("finish %q calls %+v", c.FinishReason, c.Message.ToolCalls)
	}
	if s := string(f.eng.Requests()[0].Schema); !strings.Contains(s, `"const":"get_weather"`) {
		t.Errorf("the grammar is not the call's: %s", s)
	}
}

// TestChatForcedCallUnexpressible: a forced call to a tool whose schema the grammar cannot
// express (Claude Code's maxLength 524288, a backreference, an unknown format) is served, with
// a warning for what nothing enforced.
func TestChatForcedCallUnexpressible(t *testing.T) {
	f := setup(t, config{template: servertest.ToolTemplate, reply: `{"name":"Workflow","arguments":{"script":"ls","tag":"aa","color":"red"}}`})
	body := `{"model":"fake","messages":[{"role":"user","content":"go"}],"tool_choice":{"type":"function","function":{"name":"Workflow"}},
		"tools":[{"type":"function","function":{"name":"Workflow","parameters":{"type":"object","properties":{
		"script":{"type":"string","maxLength":524288},"tag":{"type":"string","pattern":"^(a)\\1$"},"color":{"type":"string","format":"x-color"}}}}}]}`
	resp, b := f.do(t, http.MethodPost, "/v1/chat/completions", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var out struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
			Message      struct {
				ToolCalls []json.RawMessage `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
		Superfluid struct {
			Warnings []string `json:"warnings"`
		} `json:"superfluid"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Choices[0].Message.ToolCalls) != 1 || out.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("reply %s", b)
	}
	w := strings.Join(out.Superfluid.Warnings, "; ")
	for _, want := range []string{"#/properties/tag/pattern", "#/properties/color/format"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings %q do not name %s", w, want)
		}
	}
	if strings.Contains(w, "script") {
		t.Errorf("warnings %q name the maxLength the arguments keep", w)
	}
}

// TestResponsesForcedCallCut: on /v1/responses a forced call cut at 10 tokens is a
// function_call item with status incomplete, in an incomplete response (max_output_tokens),
// streamed or not.
func TestResponsesForcedCallCut(t *testing.T) {
	reply := `[{"name":"now","arguments":{}},` + forcedCall + `]`
	for _, max := range []int{10, strings.Index(reply, "Oslo") + 2} {
		f := setup(t, config{template: servertest.ToolTemplate, reply: reply})
		p := toolRequest("Weather in Oslo?")
		p.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: openai.Opt(responses.ToolChoiceOptionsRequired)}
		p.MaxOutputTokens = openai.Int(int64(max))
		// Cut at 10 tokens ([{"name":"), the call can only be to get_weather, the one tool.
		want := []string{`function_call/incomplete: get_weather ""`}
		if max > 10 {
			p.Tools = append(p.Tools, responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{Name: "now", Parameters: map[string]any{"type": "object"}}})
			want = []string{`function_call/completed: now {}`, `function_call/incomplete: get_weather "{\"city\":\"Os"`}
		}
		res, err := f.client.Responses.New(t.Context(), p)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != "incomplete" || res.IncompleteDetails.Reason != "max_output_tokens" {
			t.Errorf("status %q incomplete_details %+v", res.Status, res.IncompleteDetails)
		}
		if got := callViews(res); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("max %d: output %q, want %q", max, got, want)
		}
		stream := f.client.Responses.NewStreaming(t.Context(), p)
		var last *responses.Response
		for stream.Next() {
			if ev := stream.Current(); ev.Type == "response.incomplete" {
				r := ev.Response
				last = &r
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if last == nil {
			t.Fatalf("max %d: no response.incomplete event", max)
		}
		if got := callViews(last); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("max %d streamed: output %q, want %q", max, got, want)
		}
	}
}

// callViews is each output item as type/status: name arguments (quoted when not JSON).
func callViews(r *responses.Response) []string {
	var out []string
	for _, it := range r.Output {
		if it.Type != "function_call" {
			out = append(out, itemView(it))
			continue
		}
		c := it.AsFunctionCall()
		args := c.Arguments
		if !json.Valid([]byte(args)) {
			args = strconv.Quote(args)
		}
		out = append(out, fmt.Sprintf("function_call/%s: %s %s", c.Status, c.Name, args))
	}
	return out
}

// TestResponsesFormatWithForcedCall: text.format json_schema beside tool_choice required is
// served; the call's grammar wins for this reply.
func TestResponsesFormatWithForcedCall(t *testing.T) {
	f := setup(t, config{template: servertest.ToolTemplate, reply: "[" + forcedCall + "]"})
	p := toolRequest("Weather in Oslo?")
	p.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: openai.Opt(responses.ToolChoiceOptionsRequired)}
	p.Text = responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{
		Name: "answer", Schema: map[string]any{"type": "object", "properties": map[string]any{"summary": map[string]any{"type": "string"}}},
	}}}
	res, err := f.client.Responses.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if got := callViews(res); len(got) != 1 || got[0] != `function_call/completed: get_weather {"city":"Oslo"}` {
		t.Errorf("output %q", got)
	}
}

// TestChatResponseFormatAfterToolResult: after a tool result with tool_choice auto, the reply
// follows the json_schema format, and the grammar still lets the model call a tool.
func TestChatResponseFormatAfterToolResult(t *testing.T) {
	f := setup(t, config{template: servertest.ToolTemplate, reply: `{"summary":"sunny"}`})
	p := toolParams("Weather in Oslo?")
	p.Messages = append(p.Messages,
		openai.ChatCompletionMessageParamUnion{OfAssistant: &openai.ChatCompletionAssistantMessageParam{
			ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID: "call_1", Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "get_weather", Arguments: `{"city":"Oslo"}`},
			}}},
		}},
		openai.ToolMessage("sunny, 21 C", "call_1"))
	p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
		JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "answer", Schema: map[string]any{
			"type": "object", "properties": map[string]any{"summary": map[string]any{"type": "string"}}, "required": []string{"summary"},
		}},
	}}
	res, err := f.client.Chat.Completions.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Choices[0]; c.FinishReason != "stop" || c.Message.Content != `{"summary":"sunny"}` || len(c.Message.ToolCalls) != 0 {
		t.Errorf("finish %q content %q calls %+v", c.FinishReason, c.Message.Content, c.Message.ToolCalls)
	}
	s := string(f.eng.Requests()[0].Schema)
	if !strings.HasPrefix(s, `{"anyOf":[{`) || !strings.Contains(s, `"summary"`) || !strings.Contains(s, `"const":"get_weather"`) {
		t.Errorf("grammar schema %s, want the format or a call", s)
	}
}
