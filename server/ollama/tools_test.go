package ollama_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/store"
)

// idTemplate prints every call's id and every tool result's tool_call_id and name. It reads
// tools, so it gets the history as HF passes it rather than the polyfill.
const idTemplate = `{% if tools %}{% endif %}{% for m in messages %}{{ m.role }}:{{ m.content }}` +
	`{% if m.tool_calls %}{% for c in m.tool_calls %}[call {{ c.id }} {{ c.function.name }}]{% endfor %}{% endif %}` +
	`{% if m.tool_call_id %}[result of {{ m.tool_call_id }} {{ m.name }}]{% endif %}
{% endfor %}`

const weatherCall = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>"

// weatherTool is built the way the official client's users build tools.
func weatherTool() api.Tool {
	props := api.NewToolPropertiesMap()
	props.Set("city", api.ToolProperty{Type: api.PropertyType{"string"}, Description: "a city"})
	return api.Tool{Type: "function", Function: api.ToolFunction{
		Name: "get_weather", Description: "The weather in a city",
		Parameters: api.ToolFunctionParameters{Type: "object", Properties: props, Required: []string{"city"}},
	}}
}

// chatAll runs a chat through the official client and returns its lines.
func chatAll(t *testing.T, f *fixture, req *api.ChatRequest) []api.ChatResponse {
	t.Helper()
	if req.Model == "" {
		req.Model = "fake"
	}
	var out []api.ChatResponse
	if err := f.client.Chat(t.Context(), req, func(r api.ChatResponse) error {
		out = append(out, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// gathered is a chat reply put together from its lines.
type gathered struct {
	content, thinking string
	calls             []api.ToolCall
	last              api.ChatResponse
	logprobs          []api.Logprob
}

func gather(lines []api.ChatResponse) gathered {
	var g gathered
	var content, thinking strings.Builder
	for _, l := range lines {
		content.WriteString(l.Message.Content)
		thinking.WriteString(l.Message.Thinking)
		g.calls = append(g.calls, l.Message.ToolCalls...)
		g.logprobs = append(g.logprobs, l.Logprobs...)
	}
	g.content, g.thinking, g.last = content.String(), thinking.String(), lines[len(lines)-1]
	return g
}

// TestChatToolCall: a call in the reply comes back in message.tool_calls with an id, its index
// and arguments as an object; done_reason stays "stop", as Ollama reports it. Streamed, the
// call arrives once complete in a line of its own, after the content before it.
func TestChatToolCall(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "not streamed", true: "streamed"}[stream], func(t *testing.T) {
			f := setup(t, config{template: servertest.ToolTemplate, reply: "Let me check.\n" + weatherCall})
			lines := chatAll(t, f, &api.ChatRequest{Stream: &stream, Tools: api.Tools{weatherTool()},
				Messages: []api.Message{{Role: "user", Content: "Weather in Oslo?"}}})
			g := gather(lines)
			if len(g.calls) != 1 {
				t.Fatalf("%d calls: %+v", len(g.calls), lines)
			}
			c := g.calls[0]
			if c.Function.Name != "get_weather" || c.Function.Index != 0 || !strings.HasPrefix(c.ID, "call_") {
				t.Errorf("call %+v", c)
			}
			if args := c.Function.Arguments.String(); args != `{"city":"Oslo"}` {
				t.Errorf("arguments %s", args)
			}
			if strings.TrimSpace(g.content) != "Let me check." || g.last.DoneReason != "stop" || !g.last.Done {
				t.Errorf("content %q, done %v, done_reason %q", g.content, g.last.Done, g.last.DoneReason)
			}
			if stream {
				for i, l := range lines {
					if len(l.Message.ToolCalls) > 0 && (l.Message.Content != "" || l.Done || i == 0) {
						t.Errorf("line %d carries the call with content %q or done %v, or comes first", i, l.Message.Content, l.Done)
					}
				}
				if len(lines) < 4 {
					t.Errorf("%d lines: the content should stream before the call", len(lines))
				}
			}
			// The tools reached the prompt through the template.
			if p := f.lastRequest(t).Prompt; !strings.Contains(p, `"name": "get_weather"`) {
				t.Errorf("prompt lacks the tool:\n%s", p)
			}
		})
	}
}

// TestChatToolCallsStreamed: parallel calls each arrive in their own line, in order, with their
// index; raw lines have Ollama's shape.
func TestChatToolCallsStreamed(t *testing.T) {
	two := weatherCall + "\n" + strings.Replace(weatherCall, "Oslo", "Bergen", 1)
	f := setup(t, config{template: servertest.ToolTemplate, reply: two})
	resp, b := f.do(t, http.MethodPost, "/api/chat", `{"model":"fake","messages":[{"role":"user","content":"Weather?"}],`+
		`"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var calls []map[string]any
	for _, l := range lines(t, b) {
		msg := l["message"].(map[string]any)
		list, _ := msg["tool_calls"].([]any)
		if len(list) > 1 {
			t.Errorf("a line carries %d calls; each comes once complete: %v", len(list), l)
		}
		for _, c := range list {
			calls = append(calls, c.(map[string]any))
		}
	}
	if len(calls) != 2 {
		t.Fatalf("%d calls: %s", len(calls), b)
	}
	for i, city := range []string{"Oslo", "Bergen"} {
		fn := calls[i]["function"].(map[string]any)
		args, _ := fn["arguments"].(map[string]any)
		if fn["index"] != float64(i) || fn["name"] != "get_weather" || args["city"] != city || calls[i]["id"] == "" {
			t.Errorf("call %d: %v", i, calls[i])
		}
	}
}

// TestChatToolLoop: the calls go back in the history with arguments as an object and their
// results as tool messages naming the tool; the template sees both.
func TestChatToolLoop(t *testing.T) {
	args := api.NewToolCallFunctionArguments()
	args.Set("city", "Oslo")
	args.Set("unit", "C")
	history := []api.Message{
		{Role: "user", Content: "Weather in Oslo and Bergen?"},
		{Role: "assistant", ToolCalls: []api.ToolCall{
			{ID: "call_1", Function: api.ToolCallFunction{Name: "get_weather", Arguments: args}},
			{ID: "call_2", Function: api.ToolCallFunction{Index: 1, Name: "get_time", Arguments: args}},
		}},
		{Role: "tool", Content: "noon", ToolName: "get_time"},
		{Role: "tool", Content: "sunny, 21 C", ToolName: "get_weather"},
	}
	f := setup(t, config{template: servertest.ToolTemplate, reply: "It is sunny in Oslo."})
	g := gather(chatAll(t, f, &api.ChatRequest{Stream: ptr(false), Tools: api.Tools{weatherTool()}, Messages: history}))
	if g.content != "It is sunny in Oslo." || len(g.calls) != 0 || g.last.DoneReason != "stop" {
		t.Errorf("reply %+v", g)
	}
	p := f.lastRequest(t).Prompt
	for _, want := range []string{`{"name": "get_weather", "arguments": {"city": "Oslo", "unit": "C"}}`, "<tool_response>\nsunny, 21 C\n</tool_response>"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
}

// TestToolResultPairing: a tool result without tool_call_id gets the id of the call it answers,
// found by tool_name among the latest turn's open calls, or the next open call without one.
func TestToolResultPairing(t *testing.T) {
	calls := []api.ToolCall{
		{ID: "call_1", Function: api.ToolCallFunction{Name: "get_weather"}},
		{ID: "call_2", Function: api.ToolCallFunction{Index: 1, Name: "get_time"}},
	}
	ask := api.Message{Role: "user", Content: "Weather and time?"}
	turn := api.Message{Role: "assistant", ToolCalls: calls}
	cases := []struct {
		name    string
		results []api.Message
		want    []string
		paired  int
	}{
		{"by name, out of order", []api.Message{{Role: "tool", Content: "noon", ToolName: "get_time"}, {Role: "tool", Content: "sunny", ToolName: "get_weather"}},
			[]string{"tool:noon[result of call_2 get_time]", "tool:sunny[result of call_1 get_weather]"}, 2},
		{"no names: in order", []api.Message{{Role: "tool", Content: "sunny"}, {Role: "tool", Content: "noon"}},
			[]string{"tool:sunny[result of call_1 get_weather]", "tool:noon[result of call_2 get_time]"}, 2},
		{"ids kept", []api.Message{{Role: "tool", Content: "noon", ToolCallID: "call_2", ToolName: "get_time"}},
			[]string{"tool:noon[result of call_2 get_time]"}, 1},
		{"unknown name left alone", []api.Message{{Role: "tool", Content: "42", ToolName: "get_answer"}},
			[]string{"tool:42"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := setup(t, config{template: idTemplate})
			chatAll(t, f, &api.ChatRequest{Stream: ptr(false), Messages: append([]api.Message{ask, turn}, tc.results...)})
			p := f.lastRequest(t).Prompt
			for _, want := range append(tc.want, "[call call_1 get_weather][call call_2 get_time]") {
				if !strings.Contains(p, want) {
					t.Errorf("prompt lacks %q:\n%s", want, p)
				}
			}
			if got := strings.Count(p, "[result of"); got != tc.paired {
				t.Errorf("%d results paired, want %d:\n%s", got, tc.paired, p)
			}
		})
	}
}

// TestChatToolChoice: the extension options.tool_choice forces a call with a grammar
// (required, or a tool's name), or serves the reply as text (none); parallel_tool_calls false
// keeps one call, and makes the forced grammar ask for one call, not a list.
func TestChatToolChoice(t *testing.T) {
	const forced = `[{"name": "get_weather", "arguments": {"city": "Oslo"}}]`
	const one = `{"name": "get_weather", "arguments": {"city": "Oslo"}}`
	two := weatherCall + "\n" + strings.Replace(weatherCall, "Oslo", "Bergen", 1)
	cases := []struct {
		name    string
		options map[string]any
		reply   string
		grammar string // how the forcing schema starts; "" for none
		calls   int
	}{
		{"default", nil, weatherCall, "", 1},
		{"auto", map[string]any{"tool_choice": "auto"}, two, "", 2},
		{"auto, one call", map[string]any{"tool_choice": "auto", "parallel_tool_calls": false}, two, "", 1},
		{"none", map[string]any{"tool_choice": "none"}, weatherCall, "", 0},
		{"required", map[string]any{"tool_choice": "required"}, forced, `{"type":"array"`, 1},
		{"required, one call", map[string]any{"tool_choice": "required", "parallel_tool_calls": false}, one, `{"type":"object"`, 1},
		{"by name", map[string]any{"tool_choice": "get_weather"}, forced, `{"type":"array"`, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := setup(t, config{template: servertest.ToolTemplate, reply: tc.reply})
			g := gather(chatAll(t, f, &api.ChatRequest{Stream: ptr(false), Tools: api.Tools{weatherTool()}, Options: tc.options,
				Messages: []api.Message{{Role: "user", Content: "Weather?"}}}))
			if len(g.calls) != tc.calls || g.last.DoneReason != "stop" {
				t.Errorf("%d calls, done_reason %q: %+v", len(g.calls), g.last.DoneReason, g)
			}
			if tc.calls > 0 && g.calls[0].Function.Arguments.String() != `{"city":"Oslo"}` {
				t.Errorf("arguments %s", g.calls[0].Function.Arguments.String())
			}
			if tc.calls == 0 && !strings.Contains(g.content, "get_weather") {
				t.Errorf("content %q, want the reply as text", g.content)
			}
			r := f.lastRequest(t)
			if tc.grammar == "" && r.Format != "" || tc.grammar != "" && (r.Format != llm.FormatSchema ||
				!strings.HasPrefix(string(r.Schema), tc.grammar) || !strings.Contains(string(r.Schema), "get_weather")) {
				t.Errorf("format %q schema %s; want one starting %s", r.Format, r.Schema, tc.grammar)
			}
		})
	}
}

// TestChatToolCallWarning: text that looks like a call but does not parse is served as
// content, and the last line says so in the superfluid extension; the record keeps it.
func TestChatToolCallWarning(t *testing.T) {
	bad := `<tool_call>{"name": "get_weather", "arguments": {oops}}</tool_call>`
	body := func(stream bool) string {
		return `{"model":"fake","stream":` + map[bool]string{false: "false", true: "true"}[stream] +
			`,"messages":[{"role":"user","content":"Weather?"}],"tools":[{"type":"function","function":{"name":"get_weather"}}]}`
	}
	for _, stream := range []bool{false, true} {
		f := setup(t, config{template: servertest.ToolTemplate, reply: bad})
		resp, b := f.do(t, http.MethodPost, "/api/chat", body(stream))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		var ls []map[string]any
		if stream {
			ls = lines(t, b)
		} else {
			var one map[string]any
			if err := json.Unmarshal(b, &one); err != nil {
				t.Fatal(err)
			}
			ls = append(ls, one)
		}
		var content strings.Builder
		for _, l := range ls {
			content.WriteString(l["message"].(map[string]any)["content"].(string))
		}
		last := ls[len(ls)-1]
		ext, _ := last["superfluid"].(map[string]any)
		warnings, _ := ext["warnings"].([]any)
		if content.String() != bad || len(warnings) != 1 || !strings.Contains(warnings[0].(string), "does not parse") || last["done_reason"] != "stop" {
			t.Errorf("stream %v: content %q, last line %v", stream, content.String(), last)
		}
		if err := f.st.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		recs, err := f.st.RecentRequests(t.Context(), 1)
		if err != nil || len(recs) != 1 || !strings.Contains(recs[0].Warning, "does not parse") {
			t.Errorf("records %+v, err %v", recs, err)
		}
	}
}

// TestToolsBadInput: every malformed tool, tool choice, history call or logprobs request is a
// 400 in Ollama's shape that says what to fix, and reaches no engine.
func TestToolsBadInput(t *testing.T) {
	tool := func(params string) string {
		return `"tools":[{"type":"function","function":{"name":"get_weather","parameters":` + params + `}}]`
	}
	call := func(args string) string {
		return `{"model":"fake","messages":[{"role":"user","content":"x"},{"role":"assistant","content":"",` +
			`"tool_calls":[{"function":{"name":"get_weather","arguments":` + args + `}}]}]}`
	}
	chat := func(extra string) string {
		return `{"model":"fake","messages":[{"role":"user","content":"hi"}],` + extra + `}`
	}
	nested := func(levels int) string {
		return strings.Repeat(`{"type":"object","properties":{"a":`, levels) + `{"type":"string"}` + strings.Repeat("}}", levels)
	}
	cases := []struct {
		name, path, body, msg string
	}{
		{"parameters a string", "/api/chat", chat(tool(`"string"`)), "tools[0].function.parameters must be a JSON Schema object"},
		{"parameters an array", "/api/chat", chat(tool(`[1]`)), "tools[0].function.parameters must be a JSON Schema object"},
		{"not a function tool", "/api/chat", chat(`"tools":[{"type":"retrieval","function":{"name":"f"}}]`), `tools[0].type is "retrieval"`},
		{"tool without a name", "/api/chat", chat(`"tools":[{"type":"function","function":{}}]`), "name is empty"},
		{"2,000 levels deep", "/api/chat", chat(tool(nested(2000))), "deep"},
		{"10,000 levels deep", "/api/chat", chat(tool(nested(10000))), "exceeded max depth"},
		{"left-recursive $ref", "/api/chat", chat(tool(`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"anyOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`)), "$ref"},
		{"tool_choice names no tool", "/api/chat", chat(tool(`{"type":"object"}`) + `,"options":{"tool_choice":"get_time"}`), `"get_time", which is not in tools`},
		{"tool_choice required without tools", "/api/chat", chat(`"options":{"tool_choice":"required"}`), "no tools"},
		{"parallel_tool_calls a string", "/api/chat", chat(`"options":{"parallel_tool_calls":"no"}`), `option "parallel_tool_calls" must be a boolean`},
		{"tool_choice a number", "/api/chat", chat(`"options":{"tool_choice":1}`), `option "tool_choice" must be "auto", "none", "required" or the name of a tool`},
		{"tool_choice on generate", "/api/generate", `{"model":"fake","prompt":"hi","options":{"tool_choice":"required"}}`, "/api/generate does not take"},
		{"history arguments a string", "/api/chat", call(`"{\"city\":\"Oslo\"}"`), "messages[1].tool_calls[0].function.arguments must be a JSON object"},
		{"history arguments an array", "/api/chat", call(`[1]`), "messages[1].tool_calls[0].function.arguments must be a JSON object"},
		{"history call without a name", "/api/chat", `{"model":"fake","messages":[{"role":"assistant","tool_calls":[{"function":{"arguments":{}}}]}]}`, "function.name is empty"},
		{"top_logprobs 21", "/api/chat", chat(`"logprobs":true,"top_logprobs":21`), "top_logprobs must be between 0 and 20"},
		{"top_logprobs -1", "/api/generate", `{"model":"fake","prompt":"hi","logprobs":true,"top_logprobs":-1}`, "top_logprobs must be between 0 and 20"},
		{"top_logprobs 21 without logprobs", "/api/generate", `{"model":"fake","prompt":"hi","top_logprobs":21}`, "top_logprobs must be between 0 and 20"},
	}
	f := setup(t, config{template: servertest.ToolTemplate})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := f.do(t, http.MethodPost, tc.path, tc.body)
			checkError(t, resp, b, http.StatusBadRequest, tc.msg)
		})
	}
	if n := len(f.eng.Requests()); n != 0 {
		t.Errorf("bad requests reached the engine %d times", n)
	}
	if resp, b := f.do(t, http.MethodPost, "/api/chat", chat(`"stream":false`)); resp.StatusCode != http.StatusOK {
		t.Fatalf("after bad input: %d %s", resp.StatusCode, b)
	}
}

// TestToolWithoutProperties: the official client writes "properties": null for a tool without
// any; Ollama takes it, and so does this server.
func TestToolWithoutProperties(t *testing.T) {
	f := setup(t, config{template: servertest.ToolTemplate, reply: `[{"name": "now", "arguments": {}}]`})
	tool := api.Tool{Type: "function", Function: api.ToolFunction{Name: "now", Parameters: api.ToolFunctionParameters{Type: "object"}}}
	if b, _ := json.Marshal(tool); !strings.Contains(string(b), `"properties":null`) {
		t.Fatalf("the client no longer writes properties null: %s", b)
	}
	g := gather(chatAll(t, f, &api.ChatRequest{Stream: ptr(false), Tools: api.Tools{tool}, Options: map[string]any{"tool_choice": "required"},
		Messages: []api.Message{{Role: "user", Content: "Time?"}}}))
	if len(g.calls) != 1 || g.calls[0].Function.Name != "now" || g.calls[0].Function.Arguments.String() != "{}" {
		t.Errorf("calls %+v", g.calls)
	}
}

// TestChatToolCallClientGone: a client that hangs up halfway through a streamed tool call
// stops the generation; the server records the disconnect and keeps serving.
func TestChatToolCallClientGone(t *testing.T) {
	reply := "Checking the weather now. " + weatherCall
	f := setup(t, config{template: servertest.ToolTemplate, reply: reply, fake: func(e *enginetest.Engine) { e.TokenDelay = 5 * time.Millisecond }})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	body := `{"model":"fake","messages":[{"role":"user","content":"Weather?"}],` +
		`"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+"/api/chat", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var content strings.Builder
	for sc := bufio.NewScanner(resp.Body); !strings.Contains(content.String(), "now.") && sc.Scan(); {
		var l api.ChatResponse
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%v: %s", err, sc.Bytes())
		}
		content.WriteString(l.Message.Content)
	}
	// The content before the call has arrived: the call is being generated. Hang up after a
	// few of its tokens.
	time.Sleep(30 * time.Millisecond)
	cancel()
	var rec store.RequestRecord
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := f.st.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		recs, err := f.st.RecentRequests(t.Context(), 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 1 {
			rec = recs[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no request record")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !rec.ClientDisconnected || rec.CompletionTokens >= len(reply) || rec.Endpoint != "/api/chat" {
		t.Errorf("record %+v", rec)
	}
	if resp, b := f.do(t, http.MethodPost, "/api/chat", `{"model":"fake","stream":false,"options":{"num_predict":2},"messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("after a disconnect: %d %s", resp.StatusCode, b)
	}
}
