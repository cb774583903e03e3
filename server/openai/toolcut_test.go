package openai_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
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

// TestResponsesCustomCallCut: a custom tool call cut by max_output_tokens inside its input
// comes back as a custom_tool_call whose input is the text the model wrote so far, never the
// JSON wrapper of the function it is offered as ({"input": ...}), whole and streamed; cut
// before any of the input, the input is empty.
func TestResponsesCustomCallCut(t *testing.T) {
	const reply = `{"name": "apply_patch", "arguments": {"input": "*** Begin Patch\nmore"}}`
	tool := `{"type":"custom","name":"apply_patch","description":"Edit files."}`
	for _, tc := range []struct {
		name string
		max  int
		want string
	}{
		{"inside the input", strings.Index(reply, "Begin") + len("Begin"), "*** Begin"},
		{"before the input", strings.Index(reply, `"input"`) + 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startResponsesWith(t, filepath.Join(t.TempDir(), "db.sqlite"), respConfig{template: servertest.ToolTemplate, reply: reply})
			body := respBody(`"go"`, []string{tool}, fmt.Sprintf(`"tool_choice":{"type":"custom","name":"apply_patch"},"max_output_tokens":%d`, tc.max))
			r, _ := postResponse(t, s, body)
			if r.Status != "incomplete" || len(r.Output) != 1 || r.Output[0].Type != "custom_tool_call" {
				t.Fatalf("status %q output %+v", r.Status, r.Output)
			}
			if got := r.Output[0].AsCustomToolCall().Input; got != tc.want {
				t.Errorf("input %q, want %q", got, tc.want)
			}
			evs, err := rawStream(t, s, strings.TrimSuffix(body, "}")+`,"stream":true}`, nil)
			if err != nil {
				t.Fatal(err)
			}
			var done []string
			for _, ev := range evs {
				if ev.Type == "response.output_item.done" && ev.Item.Type == "custom_tool_call" {
					done = append(done, ev.Item.AsCustomToolCall().Input)
				}
			}
			if len(done) != 1 || done[0] != tc.want {
				t.Errorf("streamed inputs %q, want [%q]", done, tc.want)
			}
		})
	}
}

// TestCutCallHistory: a conversation holding a call the token cap cut goes on. The cut call,
// served with its partial arguments (chat completions' tool_calls, a Responses function_call
// item), is sent back as the reply gave it, with a result: 200 on chat completions, on
// /v1/responses sent back in input (store false, as the Codex CLI sends history) and through
// previous_response_id, its arguments rendered closed. Arguments that are not the start of a
// JSON object stay a 400.
func TestCutCallHistory(t *testing.T) {
	cutAt := strings.Index(forcedCall, `"Oslo"`) + 3 // the arguments are {"city":"Os
	const closed = `{"city": "Os"}`                  // as the tool template renders them

	t.Run("chat completions", func(t *testing.T) {
		f := setup(t, config{template: servertest.ToolTemplate, reply: forcedCall})
		p := forcedParams(int64(cutAt))
		res, err := f.client.Chat.Completions.New(t.Context(), p)
		if err != nil {
			t.Fatal(err)
		}
		msg := res.Choices[0].Message
		if res.Choices[0].FinishReason != "length" || len(msg.ToolCalls) != 1 || json.Valid([]byte(msg.ToolCalls[0].Function.Arguments)) {
			t.Fatalf("finish %q calls %+v; want one cut call", res.Choices[0].FinishReason, msg.ToolCalls)
		}
		p.Messages = append(p.Messages, msg.ToParam(), openai.ToolMessage("cut short", msg.ToolCalls[0].ID))
		p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{}
		p.MaxTokens = openai.Int(5)
		if _, err := f.client.Chat.Completions.New(t.Context(), p); err != nil {
			t.Fatalf("the history with the cut call: %v", err)
		}
		reqs := f.eng.Requests()
		if prompt := reqs[len(reqs)-1].Prompt; !strings.Contains(prompt, closed) {
			t.Errorf("prompt lacks the closed arguments %s:\n%s", closed, prompt)
		}
		bad := `{"model":"fake","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"get_weather","arguments":"{city: Oslo"}}]},{"role":"tool","tool_call_id":"c","content":"r"}]}`
		if resp, b := f.do(t, http.MethodPost, "/v1/chat/completions", bad); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("malformed arguments: %d %s, want 400", resp.StatusCode, b)
		}
	})

	t.Run("responses", func(t *testing.T) {
		tool := `{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}`
		s := startResponsesWith(t, filepath.Join(t.TempDir(), "db.sqlite"), respConfig{template: servertest.ToolTemplate, reply: forcedCall})
		r, _ := postResponse(t, s, respBody(`"Weather in Oslo?"`, []string{tool}, fmt.Sprintf(`"tool_choice":"required","max_output_tokens":%d`, cutAt)))
		if len(r.Output) != 1 || r.Output[0].Status != "incomplete" {
			t.Fatalf("output %+v; want one incomplete call", r.Output)
		}
		c := r.Output[0].AsFunctionCall()
		if json.Valid([]byte(c.Arguments)) {
			t.Fatalf("arguments %q are whole; want a cut call", c.Arguments)
		}
		output := `{"type":"function_call_output","call_id":"` + c.CallID + `","output":"cut short"}`
		postResponse(t, s, respBody(`[`+output+`]`, []string{tool}, `"previous_response_id":"`+r.ID+`","max_output_tokens":5`))
		if !strings.Contains(lastPrompt(s), closed) {
			t.Errorf("previous_response_id: prompt lacks %s:\n%s", closed, lastPrompt(s))
		}
		args, _ := json.Marshal(c.Arguments)
		call := `{"type":"function_call","call_id":"` + c.CallID + `","name":"get_weather","arguments":` + string(args) + `,"status":"incomplete"}`
		postResponse(t, s, respBody(`[{"role":"user","content":"Weather in Oslo?"},`+call+`,`+output+`]`, []string{tool}, `"store":false,"max_output_tokens":5`))
		if !strings.Contains(lastPrompt(s), closed) {
			t.Errorf("stateless: prompt lacks %s:\n%s", closed, lastPrompt(s))
		}
	})
}
