package chat

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestNativeTools(t *testing.T) {
	tests := []struct {
		name string
		tmpl string
		want bool
	}{
		{"if tools", `{% if tools %}x{% endif %}`, true},
		{"for over tools", `{%- for tool in tools %}{{ tool | tojson }}{% endfor %}`, true},
		{"is defined test", `{%- if not tools is defined %}{% set tools = none %}{% endif %}`, true},
		{"expression", `{{ tools }}`, true},
		{"keyword argument value", `{{ render(tools=tools) }}`, true},
		{"comment only", `{# tools are not supported #}{{ messages[0].content }}`, false},
		{"text only", `You have no tools.{{ messages[0].content }}`, false},
		{"string literal", `{{ 'tools' }}{{ "no tools" }}`, false},
		{"attribute", `{{ message.tools }}`, false},
		{"longer name", `{% if tools_in_user_message %}{% endif %}{{ custom_tools }}`, false},
		{"keyword argument name", `{{ render(tools=x) }}`, false},
		{"assignment only", `{% set tools = none %}`, false},
		{"compared", `{% if tools == none %}{% endif %}`, true},
		{"raw block", `{% raw %}{{ tools }}{% endraw %}`, false},
		{"tool_calls only", `{% for m in messages %}{{ m.tool_calls }}{% endfor %}`, false},
		{"fallback", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Parse(tt.tmpl)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := tmpl.NativeTools(); got != tt.want {
				t.Errorf("NativeTools() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestThinking(t *testing.T) {
	tests := []struct {
		name        string
		tmpl        string
		want        bool
		open, close string
	}{
		{"none", chatML, false, "<think>", "</think>"},
		{"enable_thinking", thinking, true, "<think>", "</think>"},
		{"reasoning_content", `{{ messages[0].reasoning_content }}`, true, "<think>", "</think>"},
		{"close marker only", `{{ messages[0].content.split('</think>')[-1] }}`, true, "<think>", "</think>"},
		{"think in the generation prompt", `{% if add_generation_prompt %}<think>
{% endif %}`, true, "<think>", "</think>"},
		{"mistral", `{{ '[THINK]' + messages[0].reasoning_content + '[/THINK]' }}`, true, "[THINK]", "[/THINK]"},
		{"command r", `<|START_THINKING|>{{ messages[0].content }}<|END_THINKING|>`, true, "<|START_THINKING|>", "<|END_THINKING|>"},
		{"comment only", `{# no <think> here #}{{ messages[0].content }}`, false, "<think>", "</think>"},
		{"fallback", "", false, "<think>", "</think>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Parse(tt.tmpl)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := tmpl.Thinking(); got != tt.want {
				t.Errorf("Thinking() = %v, want %v", got, tt.want)
			}
			if open, close := tmpl.ThinkingMarkers(); open != tt.open || close != tt.close {
				t.Errorf("ThinkingMarkers() = %q, %q, want %q, %q", open, close, tt.open, tt.close)
			}
		})
	}
}

// toolUse is a user question, an assistant call and its result.
var toolUse = []Message{
	{Role: "user", Content: "Weather in Paris?"},
	{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}},
	{Role: "tool", ToolCallID: "call_1", Content: "sunny"},
}

var weatherTool = Tool{Name: "get_weather", Description: "Get the weather.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}

// TestToolsEnvironment checks the values a native template sees, through
// tojson and tests (every template here reads tools, so none is
// polyfilled).
func TestToolsEnvironment(t *testing.T) {
	tests := []struct {
		name string
		tmpl string
		msgs []Message
		opts Options
		want string
	}{
		{"tools", `{{ tools | tojson }}`, nil,
			Options{Tools: []Tool{weatherTool, {Name: "now"}}},
			`[{"type": "function", "function": {"name": "get_weather", "description": "Get the weather.", ` +
				`"parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}, ` +
				`{"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}}]`},
		{"schema key order and numbers kept", `{{ tools[0].function.parameters | tojson }}`, nil,
			Options{Tools: []Tool{{Name: "f", Parameters: json.RawMessage(`{"type":"object","properties":{"z":{"maximum":10,"minimum":0.5}},"additionalProperties":false}`)}}},
			`{"type": "object", "properties": {"z": {"maximum": 10, "minimum": 0.5}}, "additionalProperties": false}`},
		{"null parameters", `{{ tools[0].function.parameters | tojson }}`, nil,
			Options{Tools: []Tool{{Name: "f", Parameters: json.RawMessage(`null`)}}},
			`{"type": "object", "properties": {}}`},
		{"tool calls", `{{ tools is none }}{% for m in messages %}|{{ m | tojson }}{% endfor %}`, toolUse, Options{},
			`True|{"role": "user", "content": "Weather in Paris?"}` +
				`|{"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}` +
				`|{"role": "tool", "content": "sunny", "tool_call_id": "call_1"}`},
		{"arguments are a dict", `{% if tools %}{% endif %}{% set f = messages[1].tool_calls[0].function %}{{ f.arguments is mapping }} {{ f.arguments.city }}`,
			toolUse, Options{}, "True Paris"},
		{"empty arguments", `{% if tools %}{% endif %}{{ messages[0].tool_calls[0].function.arguments | tojson }}`,
			[]Message{{Role: "assistant", ToolCalls: []ToolCall{{ID: "c", Name: "now"}}}}, Options{}, "{}"},
		{"content beside calls", `{% if tools %}{% endif %}{{ messages[0].content is none }} {{ messages[0].content }}`,
			[]Message{{Role: "assistant", Content: "Checking.", ToolCalls: toolUse[1].ToolCalls}}, Options{}, "False Checking."},
		{"no tool keys without calls", `{% if tools %}{% endif %}{{ 'tool_calls' in messages[0] }} {{ 'reasoning_content' in messages[0] }}`,
			[]Message{{Role: "assistant", Content: "Hi"}}, Options{}, "False False"},
		{"reasoning", `{% if tools %}{% endif %}{{ messages[0] | tojson }}`,
			[]Message{{Role: "assistant", Content: "4", Reasoning: "2+2=4"}}, Options{},
			`{"role": "assistant", "content": "4", "reasoning_content": "2+2=4"}`},
		{"reasoning only on assistant turns", `{% if tools %}{% endif %}{{ messages[0] | tojson }}`,
			[]Message{{Role: "user", Content: "hi", Reasoning: "x"}}, Options{}, `{"role": "user", "content": "hi"}`},
		{"tool name", `{% if tools %}{% endif %}{{ messages[0] | tojson }}`,
			[]Message{{Role: "tool", Content: "21:04", ToolCallID: "c", Name: "now"}}, Options{},
			`{"role": "tool", "content": "21:04", "name": "now", "tool_call_id": "c"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Parse(tt.tmpl)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !tmpl.NativeTools() {
				t.Fatal("NativeTools() = false; the test template must read tools")
			}
			got, err := tmpl.Render(tt.msgs, tt.opts)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if got != tt.want {
				t.Errorf("Render =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestTojsonIndent(t *testing.T) {
	tests := []struct {
		name, tmpl, want string
	}{
		{"order kept, nothing escaped", `{% if tools %}{% endif %}{{- tools[0] | tojson(indent=2) }}`,
			"{\n  \"type\": \"function\",\n  \"function\": {\n    \"name\": \"f\",\n    \"description\": \"a < b & c\",\n" +
				"    \"parameters\": {\n      \"type\": \"object\",\n      \"properties\": {},\n      \"x\": [\n        1,\n        2.0,\n        1e-05\n      ]\n    }\n  }\n}"},
		{"subscript operand", `{{ tools[0]['function'].name | tojson(indent=4) }}`, `"f"`},
		// With an operator the operand is not the whole expression; the
		// library's own filter renders it.
		{"not rewritten", `{{ 'x' ~ tools[0].function.name | tojson(indent=4) }}`, `x"f"`},
	}
	opts := Options{Tools: []Tool{{Name: "f", Description: "a < b & c", Parameters: json.RawMessage(`{"type":"object","properties":{},"x":[1,2.0,0.00001]}`)}}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Parse(tt.tmpl)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got, err := tmpl.Render(nil, opts)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if got != tt.want {
				t.Errorf("Render =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestCheckTools(t *testing.T) {
	params := json.RawMessage(`{"type":"object"}`)
	tests := []struct {
		name  string
		tools []Tool
		want  string // the error message; "" for none
	}{
		{"none", nil, ""},
		{"valid", []Tool{{Name: "get_weather", Parameters: params}, {Name: "now-2_B"}, {Name: "x", Parameters: json.RawMessage(" null ")}}, ""},
		{"string parameters", []Tool{{Name: "f", Parameters: json.RawMessage(`"string"`)}},
			"invalid tools: tool f: parameters must be a JSON object schema"},
		{"array parameters", []Tool{{Name: "f", Parameters: json.RawMessage(`[1]`)}},
			"invalid tools: tool f: parameters must be a JSON object schema"},
		{"broken parameters", []Tool{{Name: "f", Parameters: json.RawMessage(`{"type":`)}},
			"invalid tools: tool f: parameters must be a JSON object schema"},
		{"empty name", []Tool{{Name: "a"}, {Parameters: params}},
			"invalid tools: tools[1]: name is empty; give every tool a name"},
		{"name with a space", []Tool{{Name: "get weather"}},
			`invalid tools: tool "get weather": name must be 1 to 64 letters, digits, underscores or hyphens`},
		{"name with a dot", []Tool{{Name: "a.b"}},
			`invalid tools: tool "a.b": name must be 1 to 64 letters, digits, underscores or hyphens`},
		{"name too long", []Tool{{Name: strings.Repeat("a", 65)}},
			`invalid tools: tool "` + strings.Repeat("a", 65) + `": name must be 1 to 64 letters, digits, underscores or hyphens`},
		{"duplicate", []Tool{{Name: "f"}, {Name: "g"}, {Name: "f"}},
			"invalid tools: tool f is declared twice; tool names must be unique"},
	}
	tmpl, err := Parse(chatML)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckTools(tt.tools)
			checkErr(t, "CheckTools", err, ErrToolSchema, tt.want)
			_, err = tmpl.Render(conversation, Options{Tools: tt.tools})
			checkErr(t, "Render", err, ErrToolSchema, tt.want)
		})
	}
}

func TestCheckMessages(t *testing.T) {
	call := func(args string) []Message {
		return []Message{
			{Role: "user", Content: "hi"},
			{Role: "assistant", ToolCalls: []ToolCall{{ID: "a", Name: "f", Arguments: json.RawMessage(`{}`)}}},
			{Role: "assistant", ToolCalls: []ToolCall{{ID: "b", Name: "f", Arguments: json.RawMessage(args)}}},
		}
	}
	tests := []struct {
		name string
		msgs []Message
		want string
	}{
		{"object", call(`{"x": [1, 2]}`), ""},
		{"empty", call(""), ""},
		{"not JSON", call(`{"x": `), "invalid tool call arguments: messages[2].tool_calls[0].function.arguments is not valid JSON"},
		{"bare text", call(`city=Paris`), "invalid tool call arguments: messages[2].tool_calls[0].function.arguments is not valid JSON"},
		{"array", call(`[1]`), "invalid tool call arguments: messages[2].tool_calls[0].function.arguments is not a JSON object"},
		{"string", call(`"{}"`), "invalid tool call arguments: messages[2].tool_calls[0].function.arguments is not a JSON object"},
	}
	for _, src := range []string{chatML, `{% if tools %}{% endif %}` + chatML} { // polyfilled and native
		tmpl, err := Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				checkErr(t, "CheckMessages", CheckMessages(tt.msgs), ErrToolArguments, tt.want)
				_, err := tmpl.Render(tt.msgs, Options{})
				checkErr(t, "Render", err, ErrToolArguments, tt.want)
			})
		}
	}
}

// checkErr checks that err is nil when want is empty, else that it wraps
// sentinel and reads want.
func checkErr(t *testing.T, call string, err, sentinel error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: %v, want no error", call, err)
	case want == "":
	case err == nil:
		t.Errorf("%s: no error, want %q", call, want)
	case !errors.Is(err, sentinel):
		t.Errorf("%s: %v does not wrap %v", call, err, sentinel)
	case err.Error() != want:
		t.Errorf("%s: %q, want %q", call, err, want)
	}
}

func TestKwargsReserved(t *testing.T) {
	tmpl, err := Parse(chatML)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"messages", "tools", "bos_token", "eos_token", "add_generation_prompt"} {
		t.Run(name, func(t *testing.T) {
			_, err := tmpl.Render(conversation, Options{Kwargs: map[string]any{name: "x", "enable_thinking": false}})
			want := "chat template: chat_template_kwargs: " + name + " is set by the server; remove it"
			checkErr(t, "Render", err, ErrTemplate, want)
		})
	}
}
