package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	openai "github.com/openai/openai-go/v3"

	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/store"
)

var weatherTool = openai.ChatCompletionToolUnionParam{
	OfFunction: &openai.ChatCompletionFunctionToolParam{Function: openai.FunctionDefinitionParam{
		Name: "get_weather", Description: openai.String("The weather in a city"),
		Parameters: openai.FunctionParameters{
			"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"},
		},
	}},
}

const weatherCall = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>"

func toolParams(content string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model: "fake", Tools: []openai.ChatCompletionToolUnionParam{weatherTool},
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(content)},
	}
}

func sameJSON(t *testing.T, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("%q is not JSON: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("JSON %s, want %s", gb, wb)
	}
}

func TestChatToolCall(t *testing.T) {
	f := setup(t, config{template: servertest.ToolTemplate, reply: weatherCall})
	res, err := f.client.Chat.Completions.New(t.Context(), toolParams("Weather in Oslo?"))
	if err != nil {
		t.Fatal(err)
	}
	c := res.Choices[0]
	if c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 {
		t.Fatalf("finish %q, calls %+v", c.FinishReason, c.Message.ToolCalls)
	}
	call := c.Message.ToolCalls[0]
	if call.Function.Name != "get_weather" || !strings.HasPrefix(call.ID, "call_") || call.Type != "function" {
		t.Errorf("call %+v", call)
	}
	sameJSON(t, call.Function.Arguments, `{"city":"Oslo"}`)
	if c.Message.Content != "" || c.Message.JSON.Content.Valid() {
		t.Errorf("content %q beside a call", c.Message.Content)
	}
	// The tools reached the prompt through the template.
	if p := f.eng.Requests()[0].Prompt; !strings.Contains(p, `"name": "get_weather"`) && !strings.Contains(p, `"name":"get_weather"`) {
		t.Errorf("prompt lacks the tool:\n%s", p)
	}
}

// TestChatToolCallStreamed: the streamed call opens with id and name, then arguments on the same
// index, and reassembles (openai-go's accumulator) into the non-streamed call.
func TestChatToolCallStreamed(t *testing.T) {
	f := setup(t, config{template: servertest.ToolTemplate, reply: "Let me check.\n" + weatherCall})
	stream := f.client.Chat.Completions.NewStreaming(t.Context(), toolParams("Weather in Oslo?"))
	var acc openai.ChatCompletionAccumulator
	var opened bool
	for stream.Next() {
		chunk := stream.Current()
		acc.AddChunk(chunk)
		for _, tc := range chunk.Choices[0].Delta.ToolCalls {
			if tc.ID != "" {
				opened = tc.Function.Name == "get_weather" && tc.Index == 0
			} else if !opened {
				t.Errorf("arguments before the opening delta: %+v", tc)
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	c := acc.Choices[0]
	if c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 {
		t.Fatalf("finish %q, calls %+v", c.FinishReason, c.Message.ToolCalls)
	}
	sameJSON(t, c.Message.ToolCalls[0].Function.Arguments, `{"city":"Oslo"}`)
	if strings.TrimSpace(c.Message.Content) != "Let me check." {
		t.Errorf("content %q", c.Message.Content)
	}
}

// TestChatToolLoop: the call goes back as history with its result, and the next reply is text.
func TestChatToolLoop(t *testing.T) {
	f := setup(t, config{template: servertest.ToolTemplate, reply: "It is sunny in Oslo."})
	params := toolParams("Weather in Oslo?")
	params.Messages = append(params.Messages,
		openai.ChatCompletionMessageParamUnion{OfAssistant: &openai.ChatCompletionAssistantMessageParam{
			ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID: "call_1", Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "get_weather", Arguments: `{"city":"Oslo"}`},
			}}},
		}},
		openai.ToolMessage("sunny, 21 C", "call_1"))
	res, err := f.client.Chat.Completions.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	if res.Choices[0].FinishReason != "stop" || res.Choices[0].Message.Content != "It is sunny in Oslo." {
		t.Errorf("reply %+v", res.Choices[0])
	}
	p := f.eng.Requests()[0].Prompt
	for _, want := range []string{"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":", "<tool_response>\nsunny, 21 C\n</tool_response>"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
}

func TestChatToolCallEdgeCases(t *testing.T) {
	two := weatherCall + "\n" + strings.Replace(weatherCall, "Oslo", "Bergen", 1)
	cases := []struct {
		name, reply, extra string
		finish             string
		calls              int
		warning            string
	}{
		// Cut by the cap inside the call: length, and the call is served with what it got.
		{"cut", weatherCall, `"max_tokens":45`, "length", 1, `cut the reply inside the call to "get_weather"`},
		{"malformed", "<tool_call>{\"name\": \"get_weather\", \"arguments\": {oops}}</tool_call>", "", "stop", 0, "does not parse"},
		{"parallel", two, "", "tool_calls", 2, ""},
		{"single", two, `"parallel_tool_calls":false`, "tool_calls", 1, "parallel_tool_calls is false"},
		{"none", weatherCall, `"tool_choice":"none"`, "stop", 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := setup(t, config{template: servertest.ToolTemplate, reply: tc.reply})
			body := `{"model":"fake","messages":[{"role":"user","content":"Weather?"}],` +
				`"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]`
			if tc.extra != "" {
				body += "," + tc.extra
			}
			resp, b := f.do(t, http.MethodPost, "/v1/chat/completions", body+"}")
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			var reply struct {
				ID      string
				Choices []struct {
					Message struct {
						Content   *string
						ToolCalls []json.RawMessage `json:"tool_calls"`
					}
					FinishReason string `json:"finish_reason"`
				}
				Superfluid *struct{ Warnings []string }
			}
			if err := json.Unmarshal(b, &reply); err != nil {
				t.Fatal(err)
			}
			c := reply.Choices[0]
			if c.FinishReason != tc.finish || len(c.Message.ToolCalls) != tc.calls {
				t.Errorf("finish %q, %d calls; want %q, %d: %s", c.FinishReason, len(c.Message.ToolCalls), tc.finish, tc.calls, b)
			}
			if tc.calls == 0 && (c.Message.Content == nil || !strings.Contains(*c.Message.Content, "get_weather")) {
				t.Errorf("the call text is not kept as content: %s", b)
			}
			var warnings string
			if reply.Superfluid != nil {
				warnings = strings.Join(reply.Superfluid.Warnings, "; ")
			}
			if tc.warning == "" && warnings != "" || !strings.Contains(warnings, tc.warning) {
				t.Errorf("warnings %q, want %q", warnings, tc.warning)
			}
			if tc.warning == "" {
				return
			}
			var rec store.RequestRecord
			waitFor(t, "the request record", func() bool {
				var err error
				rec, err = f.st.Request(t.Context(), reply.ID)
				return err == nil
			})
			if !strings.Contains(rec.Warning, tc.warning) {
				t.Errorf("record warning %q", rec.Warning)
			}
		})
	}
}

func TestChatReasoning(t *testing.T) {
	f := setup(t, config{template: chatML, reply: "<think>\nThe user greets me.\n</think>\n\nHello!"})
	resp, b := f.do(t, http.MethodPost, "/v1/chat/completions", chatBody(""))
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var reply struct {
		Choices []struct {
			Message struct {
				Content   string
				Reasoning string `json:"reasoning_content"`
			}
		}
	}
	if err := json.Unmarshal(b, &reply); err != nil {
		t.Fatal(err)
	}
	if m := reply.Choices[0].Message; m.Content != "Hello!" || m.Reasoning != "The user greets me." {
		t.Errorf("content %q, reasoning %q", m.Content, m.Reasoning)
	}

	// Streamed: reasoning deltas come before content deltas, and join to the same text.
	resp, b = f.do(t, http.MethodPost, "/v1/chat/completions", chatBody(`"stream":true`))
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var reasoning, content strings.Builder
	var reasoningChunks int
	for _, data := range parseSSE(t, b).data {
		if data == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Content   string
					Reasoning string `json:"reasoning_content"`
				}
			}
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			t.Fatal(err)
		}
		if len(ch.Choices) == 0 {
			continue
		}
		d := ch.Choices[0].Delta
		if d.Reasoning != "" {
			reasoningChunks++
			if content.Len() > 0 {
				t.Errorf("reasoning after content")
			}
		}
		reasoning.WriteString(d.Reasoning)
		content.WriteString(d.Content)
	}
	if reasoning.String() != "The user greets me." || content.String() != "Hello!" {
		t.Errorf("streamed reasoning %q, content %q", reasoning.String(), content.String())
	}
	if reasoningChunks < 5 {
		t.Errorf("reasoning came in %d chunks; it should stream at token cadence", reasoningChunks)
	}
}

func TestChatLogprobs(t *testing.T) {
	f := setup(t, config{reply: "Hello world!"})
	res, err := f.client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Model: "fake", Logprobs: openai.Bool(true), TopLogprobs: openai.Int(3), Temperature: openai.Float(0),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")},
	})
	if err != nil {
		t.Fatal(err)
	}
	lp := res.Choices[0].Logprobs.Content
	if len(lp) != int(res.Usage.CompletionTokens) {
		t.Fatalf("%d logprobs for %d tokens", len(lp), res.Usage.CompletionTokens)
	}
	var text []byte
	for _, tok := range lp {
		for _, c := range tok.Bytes {
			text = append(text, byte(c))
		}
		if len(tok.TopLogprobs) != 3 || tok.Logprob > 0 {
			t.Fatalf("token %+v", tok)
		}
		for _, alt := range tok.TopLogprobs {
			if alt.Logprob > tok.TopLogprobs[0].Logprob {
				t.Errorf("top_logprobs not sorted: %+v", tok.TopLogprobs)
			}
		}
		if tok.Logprob != tok.TopLogprobs[0].Logprob {
			t.Errorf("at temperature 0 the chosen token %q (%g) should be the most likely (%q %g)", tok.Token, tok.Logprob, tok.TopLogprobs[0].Token, tok.TopLogprobs[0].Logprob)
		}
	}
	if string(text) != res.Choices[0].Message.Content {
		t.Errorf("logprob bytes %q, content %q", text, res.Choices[0].Message.Content)
	}

	// Streamed: every chunk's logprobs cover its tokens.
	stream := f.client.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{
		Model: "fake", Logprobs: openai.Bool(true), Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")},
	})
	var n int
	for stream.Next() {
		if ch := stream.Current(); len(ch.Choices) > 0 {
			n += len(ch.Choices[0].Logprobs.Content)
		}
	}
	if err := stream.Err(); err != nil || n != len("Hello world!") {
		t.Errorf("streamed %d logprobs, err %v", n, err)
	}
}

func TestChatToolsBadInput(t *testing.T) {
	nested := func(levels int) string {
		return strings.Repeat(`{"type":"object","properties":{"a":`, levels) + `{"type":"string"}` + strings.Repeat("}}", levels)
	}
	tool := func(params string) string {
		return `"tools":[{"type":"function","function":{"name":"f","parameters":` + params + `}}]`
	}
	bigBias := make([]string, 0, 1_000_000)
	for i := range 1_000_000 {
		bigBias = append(bigBias, fmt.Sprintf(`"%d":1`, i))
	}
	cases := []struct {
		name, extra string
		param, msg  string
	}{
		{"schema not an object", tool(`"string"`), "tools[0].function.parameters", "JSON Schema object"},
		{"schema an array", tool(`[1]`), "tools[0].function.parameters", "JSON Schema object"},
		{"unknown function", tool(`{"type":"object"}`) + `,"tool_choice":{"type":"function","function":{"name":"g"}}`, "", "not in tools"},
		{"deep schema", tool(nested(2000)), "", "deep"},
		{"10,000 levels", tool(nested(10000)), "", "depth"},
		{"left-recursive ref", tool(`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"anyOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`), "", "$ref"},
		{"required without tools", `"tool_choice":"required"`, "", "no tools"},
		{"left-recursive response_format", `"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}}}`, "", "$ref"},
		{"top_logprobs 21", `"logprobs":true,"top_logprobs":21`, "top_logprobs", "between 0 and 20"},
		{"huge logit_bias", `"logit_bias":{` + strings.Join(bigBias, ",") + `}`, "logit_bias", "at most"},
		{"NaN logit_bias", `"logit_bias":{"1":NaN}`, "", ""},
	}
	f := setup(t, config{template: servertest.ToolTemplate})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := f.do(t, http.MethodPost, "/v1/chat/completions", chatBody(tc.extra))
			if resp.StatusCode != 400 {
				t.Fatalf("status %d: %.300s", resp.StatusCode, b)
			}
			e := parseError(t, b)
			if tc.param != "" && e.Param != tc.param || !strings.Contains(e.Message, tc.msg) {
				t.Errorf("error %+v, want param %q and %q in the message", e, tc.param, tc.msg)
			}
		})
	}
	// History arguments that are not JSON.
	resp, b := f.do(t, http.MethodPost, "/v1/chat/completions", `{"model":"fake","messages":[{"role":"user","content":"x"},`+
		`{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{not json"}}]}]}`)
	checkError(t, resp, b, wantError{status: 400, typ: "invalid_request_error", param: "messages[1].tool_calls[0].function.arguments", msg: "not a JSON object"})
	// The server is still serving.
	if resp, b := f.do(t, http.MethodPost, "/v1/chat/completions", chatBody("")); resp.StatusCode != 200 {
		t.Fatalf("after bad input: %d %s", resp.StatusCode, b)
	}
}

// TestChatToolCallClientGone: a client that hangs up halfway through a streamed tool call
// stops the generation; the server records it and keeps serving.
func TestChatToolCallClientGone(t *testing.T) {
	f := setup(t, config{template: servertest.ToolTemplate, reply: "Checking the weather now. " + weatherCall, engine: func(e *enginetest.Engine) {
		e.TokenDelay = 5 * time.Millisecond
	}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	body := `{"model":"fake","stream":true,"messages":[{"role":"user","content":"Weather?"}],` +
		`"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+"/v1/chat/completions", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var id string
	for data := range readFrames(resp.Body) {
		c := decodeChunk(t, data)
		id = c.ID
		if c.Choices[0].Delta.Content != nil {
			break // the content before the call has arrived: the call is being generated
		}
	}
	time.Sleep(50 * time.Millisecond) // some of the call's tokens
	cancel()
	var rec store.RequestRecord
	waitFor(t, "the request record", func() bool {
		rec, err = f.st.Request(t.Context(), id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	})
	if !rec.ClientDisconnected || rec.CompletionTokens >= len("Checking the weather now. "+weatherCall) {
		t.Errorf("record %+v", rec)
	}
	if resp, b := f.do(t, http.MethodPost, "/v1/chat/completions", chatBody(`"max_tokens":2`)); resp.StatusCode != 200 {
		t.Fatalf("after a disconnect: %d %s", resp.StatusCode, b)
	}
}

// TestChatToolsCapabilities: /v1/models says whether a model takes tools and thinks, from its
// template; a template that cannot render tools refuses a request with tools, saying so.
func TestChatToolsCapabilities(t *testing.T) {
	refusing := `{% if tools %}{{ raise_exception('This model does not support tools.') }}{% endif %}` + chatML
	thinking := `{% if enable_thinking is defined and not enable_thinking %}<think></think>{% endif %}` + chatML
	cases := []struct {
		name, template        string
		tools, native, thinks bool
		status                int
	}{
		{"hermes", servertest.ToolTemplate, true, true, false, 200},
		{"polyfilled", chatML, true, false, false, 200},
		{"fallback", "", true, false, false, 200},
		{"thinking", thinking, true, false, true, 200},
		{"refusing", refusing, false, false, false, 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := setup(t, config{template: tc.template})
			_, b := f.do(t, http.MethodGet, "/v1/models/fake", "")
			var m struct {
				Capabilities struct {
					Tools       bool `json:"tools"`
					NativeTools bool `json:"native_tools"`
					Thinking    bool `json:"thinking"`
					Dialect     struct {
						EnableThinking bool `json:"enable_thinking"`
					} `json:"dialect"`
				} `json:"capabilities"`
			}
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			c := m.Capabilities
			if c.Tools != tc.tools || c.NativeTools != tc.native || c.Thinking != tc.thinks || c.Dialect.EnableThinking != tc.thinks {
				t.Errorf("capabilities %+v: %s", c, b)
			}
			resp, b := f.do(t, http.MethodPost, "/v1/chat/completions", chatBody(`"tools":[{"type":"function","function":{"name":"f"}}]`))
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if tc.status == 400 && !strings.Contains(parseError(t, b).Message, "cannot render the tools") {
				t.Errorf("error %s", b)
			}
		})
	}
}
