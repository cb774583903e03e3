package anthropic_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/store"
)

// hermesTemplate is a ChatML template with Qwen 2.5's tool section, trimmed: tools in the
// system turn, calls as <tool_call> blocks, results (with their call's name and id) as
// <tool_response> in a user turn, reasoning as <think>, and Qwen 3's enable_thinking switch.
const hermesTemplate = `{%- if tools %}<|im_start|>system
# Tools
<tools>
{%- for tool in tools %}
{{ tool | tojson }}
{%- endfor %}
</tools><|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == 'tool' %}<|im_start|>user
<tool_response name="{{ message.name }}" id="{{ message.tool_call_id }}">
{{ message.content }}
</tool_response><|im_end|>
{% elif message.role == 'assistant' %}<|im_start|>assistant
{% if message.reasoning_content %}<think>{{ message.reasoning_content }}</think>
{% endif %}{% if message.content %}{{ message.content }}{% endif %}
{%- if message.tool_calls %}{% for call in message.tool_calls %}
<tool_call>
{"name": "{{ call.function.name }}", "arguments": {{ call.function.arguments | tojson }}}
</tool_call>
{%- endfor %}{% endif %}<|im_end|>
{% else %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% if enable_thinking is defined and not enable_thinking %}<think>

</think>

{% endif %}{% endif %}`

const weatherCall = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>"

// weatherJSON is a call in the generic JSON shape a forced tool_choice constrains replies to.
const weatherJSON = `{"name": "get_weather", "arguments": {"city": "Oslo"}}`

var weatherTool = anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
	Name: "get_weather", Description: anthropic.String("The weather in a city"),
	InputSchema: anthropic.ToolInputSchemaParam{
		Properties: map[string]any{"city": map[string]any{"type": "string"}}, Required: []string{"city"},
	},
}}

// weatherTools is the `tools` field of a raw request with the weather tool.
const weatherTools = `"tools":[{"name":"get_weather","description":"The weather in a city",` +
	`"input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]`

func toolParams(edit ...func(*anthropic.MessageNewParams)) anthropic.MessageNewParams {
	return params(append([]func(*anthropic.MessageNewParams){func(p *anthropic.MessageNewParams) {
		p.Tools = []anthropic.ToolUnionParam{weatherTool}
		p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Oslo?"))}
	}}, edit...)...)
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

// toolUses returns the reply's tool_use blocks.
func toolUses(msg anthropic.Message) []anthropic.ContentBlockUnion {
	var out []anthropic.ContentBlockUnion
	for _, b := range msg.Content {
		if b.Type == "tool_use" {
			out = append(out, b)
		}
	}
	return out
}

func TestToolUse(t *testing.T) {
	f := setup(t, config{template: hermesTemplate, reply: weatherCall})
	msg, err := f.client.Messages.New(t.Context(), toolParams())
	if err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != anthropic.StopReasonToolUse || len(msg.Content) != 1 {
		t.Fatalf("stop_reason %q, content %s; want tool_use and one tool_use block (no empty text)", msg.StopReason, msg.RawJSON())
	}
	use := msg.Content[0].AsToolUse()
	if use.Type != "tool_use" || use.Name != "get_weather" || !strings.HasPrefix(use.ID, "toolu_") || len(use.ID) < len("toolu_")+8 {
		t.Errorf("tool_use %s", msg.Content[0].RawJSON())
	}
	sameJSON(t, string(use.Input), `{"city":"Oslo"}`)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(msg.Content[0].RawJSON()), &fields); err != nil || len(fields) != 4 {
		t.Errorf("tool_use block %s, want exactly type, id, name and input", msg.Content[0].RawJSON())
	}
	// The tools reached the prompt through the template.
	if p := f.eng.Requests()[0].Prompt; !strings.Contains(p, `"name": "get_weather"`) || !strings.Contains(p, "The weather in a city") {
		t.Errorf("prompt lacks the tool:\n%s", p)
	}
}

// TestToolUseStreamed: a text block then a tool_use block that opens with input {} and fills
// through input_json_delta; the SDK's accumulator rebuilds the non-streamed call.
func TestToolUseStreamed(t *testing.T) {
	f := setup(t, config{template: hermesTemplate, reply: "Let me check.\n" + weatherCall})
	types, msg, err := stream(t, f, toolParams())
	if err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != anthropic.StopReasonToolUse || len(msg.Content) != 2 {
		t.Fatalf("events %v, message %s", types, msg.RawJSON())
	}
	if msg.Content[0].Type != "text" || strings.TrimSpace(msg.Content[0].Text) != "Let me check." {
		t.Errorf("text block %s", msg.Content[0].RawJSON())
	}
	use := msg.Content[1].AsToolUse()
	if use.Name != "get_weather" || !strings.HasPrefix(use.ID, "toolu_") {
		t.Errorf("tool_use %s", msg.Content[1].RawJSON())
	}
	sameJSON(t, string(use.Input), `{"city":"Oslo"}`)
	whole, err := f.client.Messages.New(t.Context(), toolParams())
	if err != nil {
		t.Fatal(err)
	}
	calls := toolUses(*whole)
	if len(calls) != 1 || calls[0].Name != use.Name {
		t.Fatalf("non-streamed %s", whole.RawJSON())
	}
	sameJSON(t, string(use.Input), string(calls[0].Input))

	// The wire: the tool_use block's start and deltas, and the stop reason.
	resp, b := f.do(t, http.MethodPost, "/v1/messages", body(weatherTools+`,"stream":true`))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	evs := parseSSE(t, b)
	blocks := checkBlocks(t, evs)
	if len(blocks) != 2 || str(blocks[0].start["type"]) != "text" || str(blocks[1].start["type"]) != "tool_use" {
		t.Fatalf("blocks %+v", blocks)
	}
	start := blocks[1].start
	if len(start) != 4 || !strings.HasPrefix(str(start["id"]), "toolu_") || str(start["name"]) != "get_weather" || string(start["input"]) != "{}" {
		t.Errorf("tool_use start %v", start)
	}
	var partial strings.Builder
	for _, d := range blocks[1].deltas {
		if str(d["type"]) != "input_json_delta" {
			t.Errorf("delta %v in a tool_use block", d)
		}
		partial.WriteString(str(d["partial_json"]))
	}
	sameJSON(t, partial.String(), `{"city":"Oslo"}`)
	if last := evs[len(evs)-2].data; !strings.Contains(last, `"stop_reason":"tool_use"`) {
		t.Errorf("message_delta %s", last)
	}
}

// TestToolLoop: the call goes back as a tool_use block with its tool_result, and text in the
// same user message follows the result; the next reply is text.
func TestToolLoop(t *testing.T) {
	f := setup(t, config{template: hermesTemplate, reply: "It is sunny in Oslo."})
	msg, err := f.client.Messages.New(t.Context(), toolParams(func(p *anthropic.MessageNewParams) {
		p.Messages = append(p.Messages,
			anthropic.NewAssistantMessage(anthropic.NewTextBlock("Let me check."),
				anthropic.NewToolUseBlock("toolu_01", map[string]any{"city": "Oslo"}, "get_weather")),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_01", "sunny, 21 C", false), anthropic.NewTextBlock("And tomorrow?")))
	}))
	if err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != anthropic.StopReasonEndTurn || len(msg.Content) != 1 || msg.Content[0].Text != "It is sunny in Oslo." {
		t.Errorf("reply %s", msg.RawJSON())
	}
	p := f.eng.Requests()[0].Prompt
	want := "<|im_start|>assistant\nLet me check.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call><|im_end|>\n" +
		"<|im_start|>user\n<tool_response name=\"get_weather\" id=\"toolu_01\">\nsunny, 21 C\n</tool_response><|im_end|>\n" +
		"<|im_start|>user\nAnd tomorrow?<|im_end|>\n<|im_start|>assistant\n"
	if !strings.HasSuffix(p, want) {
		t.Errorf("prompt:\n%s\nwant it to end with:\n%s", p, want)
	}
}

// TestToolResults: results in various shapes reach the template as tool messages, in order.
func TestToolResults(t *testing.T) {
	const call = `{"role":"user","content":"Weather?"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"city":"Oslo"}}]},`
	tests := []struct {
		name, user string
		want       string // the end of the prompt
	}{
		{"is_error", `[{"type":"tool_result","tool_use_id":"toolu_01","content":"city not found","is_error":true}]`,
			"<tool_response name=\"get_weather\" id=\"toolu_01\">\nError: city not found\n</tool_response>"},
		{"text blocks", `[{"type":"tool_result","tool_use_id":"toolu_01","content":[{"type":"text","text":"sunny, "},{"type":"text","text":"21 C"}]}]`,
			"<tool_response name=\"get_weather\" id=\"toolu_01\">\nsunny, 21 C\n</tool_response>"},
		{"no content", `[{"type":"tool_result","tool_use_id":"toolu_01"}]`,
			"<tool_response name=\"get_weather\" id=\"toolu_01\">\n\n</tool_response>"},
		{"text, result, text", `[{"type":"text","text":"Here:"},{"type":"tool_result","tool_use_id":"toolu_01","content":"sunny"},{"type":"text","text":"Thanks."}]`,
			"<|im_start|>user\nHere:<|im_end|>\n<|im_start|>user\n<tool_response name=\"get_weather\" id=\"toolu_01\">\nsunny\n</tool_response><|im_end|>\n" +
				"<|im_start|>user\nThanks."},
	}
	f := setup(t, config{template: hermesTemplate})
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := f.do(t, http.MethodPost, "/v1/messages", msgs(`[`+call+`{"role":"user","content":`+tt.user+`}]`))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if p := f.eng.Requests()[i].Prompt; !strings.HasSuffix(p, tt.want+"<|im_end|>\n<|im_start|>assistant\n") {
				t.Errorf("prompt:\n%s\nwant it to end with:\n%s", p, tt.want)
			}
		})
	}
}

// TestToolLoopPolyfill: a template without tool syntax still takes the tools, the call and its
// result (the core's polyfill), so even a base model can be driven through the loop.
func TestToolLoopPolyfill(t *testing.T) {
	f := setup(t, config{})
	resp, b := f.do(t, http.MethodPost, "/v1/messages", `{"model":"fake","max_tokens":10,`+weatherTools+`,"messages":[`+
		`{"role":"user","content":"Weather?"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"city":"Oslo"}}]},`+
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"sunny"}]}]}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	p := f.eng.Requests()[0].Prompt
	for _, want := range []string{"get_weather", `"city": "Oslo"`, "toolu_01", "sunny"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
}

// wireReply is a non-streamed reply as raw JSON.
type wireReply struct {
	ID         string                       `json:"id"`
	Content    []map[string]json.RawMessage `json:"content"`
	StopReason string                       `json:"stop_reason"`
	Superfluid *struct {
		Warnings []string `json:"warnings"`
	} `json:"superfluid"`
}

func TestToolChoiceAndStopReasons(t *testing.T) {
	two := weatherCall + "\n" + strings.Replace(weatherCall, "Oslo", "Bergen", 1)
	tests := []struct {
		name, reply, extra string
		forced             bool   // the engine got a grammar for a call
		blocks             string // the reply's block types
		stop               string
		warning            string
	}{
		{"auto", weatherCall, `"tool_choice":{"type":"auto"}`, false, "tool_use", "tool_use", ""},
		{"any", weatherJSON, `"tool_choice":{"type":"any"}`, true, "tool_use", "tool_use", ""},
		{"tool", weatherJSON, `"tool_choice":{"type":"tool","name":"get_weather"}`, true, "tool_use", "tool_use", ""},
		{"none", weatherCall, `"tool_choice":{"type":"none"}`, false, "text", "end_turn", ""},
		{"parallel", two, "", false, "tool_use,tool_use", "tool_use", ""},
		{"disable_parallel_tool_use", two, `"tool_choice":{"type":"auto","disable_parallel_tool_use":true}`, false, "tool_use", "tool_use", "the reply made 1 more tool calls"},
		// Cut inside the call: max_tokens, and the unfinished call is served as text.
		{"cut inside the call", weatherCall, `"max_tokens":20`, false, "text", "max_tokens", "does not parse"},
		// Cut after a complete call: still max_tokens, with the call. (A whole reply lists its
		// text before its calls, wherever the model wrote it.)
		{"cut after the call", weatherCall + " and more text", `"max_tokens":` + strconv.Itoa(len(weatherCall)+4), false, "text,tool_use", "max_tokens", ""},
		{"malformed", "<tool_call>{\"name\": \"get_weather\", \"arguments\": {oops}}</tool_call>", "", false, "text", "end_turn", "does not parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t, config{template: hermesTemplate, reply: tt.reply})
			extra := weatherTools + `,"max_tokens":400`
			if tt.extra != "" {
				extra += "," + tt.extra
			}
			resp, b := f.do(t, http.MethodPost, "/v1/messages", body(extra))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			var r wireReply
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			var types []string
			ids := map[string]bool{}
			for _, c := range r.Content {
				types = append(types, str(c["type"]))
				if id := str(c["id"]); id != "" {
					ids[id] = true
				}
			}
			if strings.Join(types, ",") != tt.blocks || r.StopReason != tt.stop {
				t.Errorf("blocks %v, stop %q; want %s, %s: %s", types, r.StopReason, tt.blocks, tt.stop, b)
			}
			if n := strings.Count(tt.blocks, "tool_use"); len(ids) != n {
				t.Errorf("%d distinct tool_use ids for %d calls: %s", len(ids), n, b)
			}
			if tt.blocks == "text" && !strings.Contains(str(r.Content[0]["text"]), `{"name":`) {
				t.Errorf("the call text is not kept as text: %s", b)
			}
			if req := f.eng.Requests()[0]; (req.Format == llm.FormatSchema) != tt.forced {
				t.Errorf("engine format %q, forced %v", req.Format, tt.forced)
			}
			var warnings string
			if r.Superfluid != nil {
				warnings = strings.Join(r.Superfluid.Warnings, "; ")
			}
			if tt.warning == "" && warnings != "" || !strings.Contains(warnings, tt.warning) {
				t.Errorf("warnings %q, want %q", warnings, tt.warning)
			}
			if tt.warning == "" {
				return
			}
			if err := f.st.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			if rec, err := f.st.Request(t.Context(), r.ID); err != nil || !strings.Contains(rec.Warning, tt.warning) {
				t.Errorf("record warning %q (%v)", rec.Warning, err)
			}
		})
	}
}

// TestToolWarningStreamed: the warning of a streamed reply rides on message_delta.
func TestToolWarningStreamed(t *testing.T) {
	f := setup(t, config{template: hermesTemplate, reply: "<tool_call>{\"name\": \"get_weather\", \"arguments\": {oops}}</tool_call>"})
	resp, b := f.do(t, http.MethodPost, "/v1/messages", body(weatherTools+`,"stream":true`))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	evs := parseSSE(t, b)
	checkBlocks(t, evs)
	var md struct {
		Delta struct {
			StopReason string `json:"stop_reason"`
		}
		Superfluid struct{ Warnings []string }
	}
	if err := json.Unmarshal([]byte(evs[len(evs)-2].data), &md); err != nil {
		t.Fatal(err)
	}
	if md.Delta.StopReason != "end_turn" || len(md.Superfluid.Warnings) != 1 || !strings.Contains(md.Superfluid.Warnings[0], "does not parse") {
		t.Errorf("message_delta %s", evs[len(evs)-2].data)
	}
}

// TestToolUseClientGone: a client that closes the body halfway through a streamed tool call
// stops the generation; the server records it and keeps serving.
func TestToolUseClientGone(t *testing.T) {
	const before = "Checking the weather now."
	reply := before + " " + weatherCall
	f := setup(t, config{template: hermesTemplate, reply: reply, engine: func(e *enginetest.Engine) {
		e.TokenDelay = 10 * time.Millisecond
	}})
	resp, err := http.Post(f.srv.URL+"/v1/messages", "application/json", strings.NewReader(body(weatherTools+`,"stream":true`)))
	if err != nil {
		t.Fatal(err)
	}
	var id string
	var text strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for text.String() != before && sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Message struct{ ID string }
			Delta   struct{ Text string }
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Message.ID != "" {
			id = ev.Message.ID
		}
		text.WriteString(ev.Delta.Text)
	}
	// The text before the call has arrived: the call's tokens are being generated.
	time.Sleep(50 * time.Millisecond)
	resp.Body.Close()
	var rec store.RequestRecord
	waitFor(t, "the request record", func() bool {
		if err := f.st.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		rec, err = f.st.Request(t.Context(), id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	})
	if !rec.ClientDisconnected || rec.CompletionTokens >= len(reply) || rec.CompletionTokens <= len(before) {
		t.Errorf("record %+v; want a client disconnect inside the call", rec)
	}
	if resp, b := f.do(t, http.MethodPost, "/v1/messages", body(`"max_tokens":2`)); resp.StatusCode != http.StatusOK {
		t.Fatalf("after a disconnect: %d %s", resp.StatusCode, b)
	}
}

func TestToolsBadInput(t *testing.T) {
	tool := func(schema string) string {
		return `"tools":[{"name":"f","input_schema":` + schema + `}]`
	}
	history := func(assistant string) string {
		return msgs(`[{"role":"user","content":"x"},{"role":"assistant","content":[` + assistant + `]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"y"}]}]`)
	}
	// 10,000 levels of nested object schemas: deeper than JSON decoders go (refused as the body
	// is read), and 4,000 levels, which decode and reach the schema checks.
	nested := func(levels int) string {
		return strings.Repeat(`{"type":"object","properties":{"a":`, levels) + `{"type":"string"}` + strings.Repeat("}}", levels)
	}
	tests := []struct {
		name, body string
		want       wantError
	}{
		{"input_schema a string", body(tool(`"object"`)), wantError{400, invalidReq, "tools.0.input_schema: Input should be a valid dictionary"}},
		{"input_schema a list", body(tool(`[{"type":"object"}]`)), wantError{400, invalidReq, "tools.0.input_schema: Input should be a valid dictionary"}},
		{"input_schema of a string", body(tool(`{"type":"string"}`)), wantError{400, invalidReq, "tools.0.input_schema.type: Input should be 'object'"}},
		{"input_schema missing", body(`"tools":[{"name":"f"}]`), wantError{400, invalidReq, "tools.0.input_schema: Field required"}},
		{"tool name missing", body(`"tools":[{"input_schema":{"type":"object"}}]`), wantError{400, invalidReq, "tools.0.name: Field required"}},
		{"tool a string", body(`"tools":["f"]`), wantError{400, invalidReq, "tools.0: Input should be a valid dictionary"}},
		{"tools an object", body(`"tools":{"name":"f"}`), wantError{400, invalidReq, "tools: Input should be a valid list"}},
		{"tool name with a space", body(`"tools":[{"name":"get weather","input_schema":{"type":"object"}}]`),
			wantError{400, invalidReq, `tools.0.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$', got "get weather"`}},
		{"tool declared twice", body(`"tools":[{"name":"f","input_schema":{"type":"object"}},{"name":"f","input_schema":{"type":"object"}}]`),
			wantError{400, invalidReq, "declared twice"}},
		{"schema 10,000 levels deep", body(tool(nested(10_000))), wantError{400, invalidReq, "deeper than"}},
		{"schema 4,000 levels deep", body(tool(nested(4_000))), wantError{400, invalidReq, "deep"}},
		{"tool_choice names an unknown tool", body(weatherTools + `,"tool_choice":{"type":"tool","name":"get_time"}`),
			wantError{400, invalidReq, `tool_choice.name: "get_time" is not one of the tools given (get_weather)`}},
		{"tool_choice names a tool, no tools", body(`"tool_choice":{"type":"tool","name":"get_time"}`),
			wantError{400, invalidReq, `tool_choice.name: "get_time" names a tool, but no tools were given`}},
		{"tool_choice tool without name", body(weatherTools + `,"tool_choice":{"type":"tool"}`), wantError{400, invalidReq, "tool_choice.name: Field required"}},
		{"tool_choice unknown type", body(weatherTools + `,"tool_choice":{"type":"required"}`), wantError{400, invalidReq, "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'"}},
		{"tool_choice a string", body(weatherTools + `,"tool_choice":"any"`), wantError{400, invalidReq, "tool_choice: Input should be a valid dictionary"}},
		{"tool_choice any without tools", body(`"tool_choice":{"type":"any"}`), wantError{400, invalidReq, "no tools were given"}},
		{"tool_use input a string", history(`{"type":"tool_use","id":"toolu_1","name":"f","input":"{\"a\":1}"}`),
			wantError{400, invalidReq, "messages.1.content.0.input: Input should be a valid dictionary"}},
		{"tool_use input a list", history(`{"type":"tool_use","id":"toolu_1","name":"f","input":[1]}`),
			wantError{400, invalidReq, "messages.1.content.0.input: Input should be a valid dictionary"}},
		{"tool_use input missing", history(`{"type":"tool_use","id":"toolu_1","name":"f"}`), wantError{400, invalidReq, "messages.1.content.0.input: Field required"}},
		{"tool_use id missing", history(`{"type":"tool_use","name":"f","input":{}}`), wantError{400, invalidReq, "messages.1.content.0.id: Field required"}},
		{"tool_use name a number", history(`{"type":"tool_use","id":"toolu_1","name":5,"input":{}}`),
			wantError{400, invalidReq, "messages.1.content.0.name: Input should be a valid string"}},
		{"tool_result without tool_use_id", msgs(`[{"role":"user","content":[{"type":"tool_result","content":"y"}]}]`),
			wantError{400, invalidReq, "messages.0.content.0.tool_use_id: Field required"}},
		{"tool_result with a video", msgs(`[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"video"}]}]}]`),
			wantError{400, invalidReq, `messages.2.content.0.content.0.type: unknown content block type "video"`}},
		{"tool_use in a user message", msgs(`[{"role":"user","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]}]`),
			wantError{400, invalidReq, "messages.0.content.0: tool_use blocks belong in assistant messages"}},
		{"thinking in a user message", msgs(`[{"role":"user","content":[{"type":"thinking","thinking":"hm","signature":"s"}]}]`),
			wantError{400, invalidReq, "messages.0.content.0: thinking blocks belong in assistant messages"}},
	}
	f := setup(t, config{template: hermesTemplate})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := f.do(t, http.MethodPost, "/v1/messages", tt.body)
			checkError(t, resp, b, tt.want)
		})
	}
	if n := len(f.eng.Requests()); n != 0 {
		t.Errorf("bad requests reached the engine %d times", n)
	}
	// The server is still serving.
	if resp, b := f.do(t, http.MethodPost, "/v1/messages", body("")); resp.StatusCode != http.StatusOK {
		t.Fatalf("after bad input: %d %s", resp.StatusCode, b)
	}
}

// TestCountTokensTools: count_tokens counts tools, thinking and tool history: the count is what
// a generation of the same conversation reports as its input, and tools add to it.
func TestCountTokensTools(t *testing.T) {
	f := setup(t, config{template: hermesTemplate})
	conv := `"messages":[{"role":"user","content":"Weather?"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"city":"Oslo"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"sunny"}]}],` +
		`"thinking":{"type":"disabled"},"tool_choice":{"type":"auto"}`
	count := func(extra string) int {
		t.Helper()
		resp, b := f.do(t, http.MethodPost, "/v1/messages/count_tokens", `{"model":"fake",`+conv+extra+`}`)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		var c struct {
			InputTokens int `json:"input_tokens"`
		}
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		return c.InputTokens
	}
	withTools, without := count(","+weatherTools), count("")
	if withTools <= without {
		t.Errorf("count with tools %d, without %d", withTools, without)
	}
	resp, b := f.do(t, http.MethodPost, "/v1/messages", `{"model":"fake","max_tokens":5,`+conv+","+weatherTools+`}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var msg struct {
		Usage struct {
			InputTokens int `json:"input_tokens"`
		}
	}
	if err := json.Unmarshal(b, &msg); err != nil {
		t.Fatal(err)
	}
	if msg.Usage.InputTokens != withTools {
		t.Errorf("count %d, generation input %d", withTools, msg.Usage.InputTokens)
	}
	if p := f.eng.Requests()[0].Prompt; !strings.Contains(p, "<tool_response") || !strings.Contains(p, "<tools>") {
		t.Errorf("prompt %s", p)
	}
	// Tools are checked as for a generation, by the dialect and by the core.
	for _, tt := range []struct{ tools, msg string }{
		{`"tools":[{"name":"f","input_schema":"object"}]`, "tools.0.input_schema: Input should be a valid dictionary"},
		{`"tools":[{"name":"f","input_schema":{"type":"object"}},{"name":"f","input_schema":{"type":"object"}}]`, "declared twice"},
	} {
		resp, b = f.do(t, http.MethodPost, "/v1/messages/count_tokens", `{"model":"fake",`+conv+","+tt.tools+`}`)
		checkError(t, resp, b, wantError{400, invalidReq, tt.msg})
	}
}
