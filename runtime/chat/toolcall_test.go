package chat

import (
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf"
)

type wantCall struct{ name, args string }

var callIDShape = regexp.MustCompile(`^call_[0-9a-f]{24}$`)

// checkParse runs p on in and compares with the wants; suspect says
// whether the reply must report suspect text.
func checkParse(t *testing.T, p ToolParser, in, wantContent string, want []wantCall, suspect bool) {
	t.Helper()
	content, calls, sus, err := p.Parse(in)
	if content != wantContent {
		t.Errorf("content = %q, want %q", content, wantContent)
	}
	if (sus != "") != suspect || (err != nil) != suspect {
		t.Errorf("suspect = %q, err = %v; want suspect %v", sus, err, suspect)
	}
	if err != nil && !errors.Is(err, ErrToolCall) {
		t.Errorf("err %v does not wrap ErrToolCall", err)
	}
	if sus != "" && !strings.Contains(content, sus) {
		t.Errorf("suspect %q was dropped from content %q", sus, content)
	}
	if len(calls) != len(want) {
		t.Fatalf("got %d calls %+v, want %d", len(calls), calls, len(want))
	}
	seen := map[string]bool{}
	for i, c := range calls {
		if c.Name != want[i].name || string(c.Arguments) != want[i].args {
			t.Errorf("call %d = %s(%s), want %s(%s)", i, c.Name, c.Arguments, want[i].name, want[i].args)
		}
		if !callIDShape.MatchString(c.ID) || seen[c.ID] {
			t.Errorf("call %d: id %q is malformed or repeated", i, c.ID)
		}
		seen[c.ID] = true
	}
}

const weatherArgs = `{"location":"Paris","unit":"celsius"}`

func TestHermesToolParser(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		content string
		calls   []wantCall
		suspect bool
	}{
		{"no call", "The weather is fine.\n", "The weather is fine.\n", nil, false},
		{"one call (Qwen2.5 output)",
			"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>",
			"", []wantCall{{"get_weather", weatherArgs}}, false},
		{"content before and trailing text",
			"Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>\nOne moment.",
			"Let me check.\n\nOne moment.", []wantCall{{"get_weather", weatherArgs}}, false},
		{"several calls",
			"<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>",
			"", []wantCall{{"a", `{"x":1}`}, {"b", `{}`}}, false},
		{"two objects in one tag",
			"<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n{\"name\": \"b\", \"arguments\": {\"y\": [1, 2]}}\n</tool_call>",
			"", []wantCall{{"a", `{}`}, {"b", `{"y":[1,2]}`}}, false},
		{"missing opening tag",
			"{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>",
			"", []wantCall{{"get_weather", weatherArgs}}, false},
		{"missing opening tag after content with braces",
			"Use {curly} braces.\n{\"name\": \"a\", \"arguments\": {}}</tool_call>",
			"Use {curly} braces.", []wantCall{{"a", `{}`}}, false},
		{"missing closing tag at the end",
			"<tool_call>\n{\"name\": \"a\", \"arguments\": {\"q\": \"x\"}}\n",
			"", []wantCall{{"a", `{"q":"x"}`}}, false},
		{"string-encoded arguments",
			`<tool_call>{"name": "a", "arguments": "{\"q\": \"x\"}"}</tool_call>`,
			"", []wantCall{{"a", `{"q":"x"}`}}, false},
		{"parameters instead of arguments, no arguments at all",
			`<tool_call>{"name": "a", "parameters": {"k": true}}</tool_call><tool_call>{"name": "now"}</tool_call>`,
			"", []wantCall{{"a", `{"k":true}`}, {"now", `{}`}}, false},
		{"no tags: bare JSON call",
			`{"name": "a", "arguments": {"k": 1}}`,
			"", []wantCall{{"a", `{"k":1}`}}, false},
		{"malformed JSON",
			"Checking.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"k\": }\n</tool_call>",
			"Checking.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"k\": }\n</tool_call>", nil, true},
		{"one good call, one malformed",
			"<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>\n<tool_call>{\"name\": \"b\", \"arguments\": {\"k\": 1</tool_call>",
			"<tool_call>{\"name\": \"b\", \"arguments\": {\"k\": 1</tool_call>", []wantCall{{"a", `{}`}}, true},
		{"no name", `<tool_call>{"arguments": {}}</tool_call>`, `<tool_call>{"arguments": {}}</tool_call>`, nil, true},
		{"arguments not an object", `<tool_call>{"name": "a", "arguments": [1]}</tool_call>`,
			`<tool_call>{"name": "a", "arguments": [1]}</tool_call>`, nil, true},
		{"text inside the tag", `<tool_call>{"name": "a", "arguments": {}} and more</tool_call>`,
			`<tool_call>{"name": "a", "arguments": {}} and more</tool_call>`, nil, true},
		{"closing tag alone", "I am done.</tool_call>", "I am done.</tool_call>", nil, true},
		{"unfinished call at the end", "<tool_call>\n{\"name\": \"a\", \"argu", "<tool_call>\n{\"name\": \"a\", \"argu", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkParse(t, HermesToolParser{}, tt.in, tt.content, tt.calls, tt.suspect)
		})
	}
}

func TestLlama3ToolParser(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		content string
		calls   []wantCall
		suspect bool
	}{
		{"no call", "Paris is in France.", "Paris is in France.", nil, false},
		{"JSON reply (Llama 3.1 JSON tool calling)",
			`{"name": "get_weather", "parameters": {"location": "Paris", "unit": "celsius"}}`,
			"", []wantCall{{"get_weather", weatherArgs}}, false},
		{"after python_tag",
			`<|python_tag|>{"name": "get_weather", "parameters": {"location": "Paris", "unit": "celsius"}}`,
			"", []wantCall{{"get_weather", weatherArgs}}, false},
		{"content before python_tag",
			"Sure.\n<|python_tag|>{\"name\": \"a\", \"arguments\": {}}",
			"Sure.", []wantCall{{"a", `{}`}}, false},
		{"several calls separated by ;",
			`{"name": "a", "parameters": {"x": 1}}; {"name": "b", "parameters": {"y": "2"}}`,
			"", []wantCall{{"a", `{"x":1}`}, {"b", `{"y":"2"}`}}, false},
		{"several python tags",
			`<|python_tag|>{"name": "a", "parameters": {}}<|python_tag|>{"name": "b", "parameters": {}}`,
			"", []wantCall{{"a", `{}`}, {"b", `{}`}}, false},
		{"trailing text",
			"{\"name\": \"a\", \"parameters\": {}}\nI called a.",
			"I called a.", []wantCall{{"a", `{}`}}, false},
		{"JSON content that is not a call", `{"answer": 42}`, `{"answer": 42}`, nil, false},
		{"call on its own line after text (Llama 3.1 8B)",
			"Let me check.\n\n{\"name\": \"a\", \"parameters\": {\"x\": 1}}",
			"Let me check.", []wantCall{{"a", `{"x":1}`}}, false},
		{"JSON inside a sentence is content",
			`Send {"name": "a", "parameters": {}} to call it.`, `Send {"name": "a", "parameters": {}} to call it.`, nil, false},
		{"type function first (Llama 3.2)",
			`{"type": "function", "name": "a", "parameters": {"x": 1}}`, "", []wantCall{{"a", `{"x":1}`}}, false},
		{"JSON then a python tag: the tag separates calls",
			`{"name": "a", "parameters": {}}<|python_tag|>{"name": "b", "parameters": {}}`, "", []wantCall{{"a", `{}`}, {"b", `{}`}}, false},
		{"wrong keys", `{"function": "a", "params": {}}`, `{"function": "a", "params": {}}`, nil, true},
		{"malformed JSON", `{"name": "a", "parameters": {"x": 1,}}`, `{"name": "a", "parameters": {"x": 1,}}`, nil, true},
		{"malformed after python_tag", "Hi <|python_tag|>brave_search.call(query=\"x\")",
			"Hi <|python_tag|>brave_search.call(query=\"x\")", nil, true},
		{"second call malformed", `{"name": "a", "parameters": {}}; {"name": "b", "parameters": {`,
			`{"name": "a", "parameters": {}}; {"name": "b", "parameters": {`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkParse(t, Llama3ToolParser{}, tt.in, tt.content, tt.calls, tt.suspect)
		})
	}
}

func TestMistralToolParser(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		content string
		calls   []wantCall
		suspect bool
	}{
		{"no call", "Bonjour.", "Bonjour.", nil, false},
		{"JSON list (Mistral 7B v0.3)",
			`[TOOL_CALLS] [{"name": "get_weather", "arguments": {"location": "Paris", "unit": "celsius"}}]`,
			"", []wantCall{{"get_weather", weatherArgs}}, false},
		{"several calls in the list",
			`[TOOL_CALLS][{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}, "id": "abcDEF123"}]`,
			"", []wantCall{{"a", `{"x":1}`}, {"b", `{}`}}, false},
		{"name[ARGS] form (Mistral Small 3.2, Magistral)",
			`[TOOL_CALLS]get_weather[ARGS]{"location": "Paris", "unit": "celsius"}`,
			"", []wantCall{{"get_weather", weatherArgs}}, false},
		{"name[ARGS] repeated, with CALL_ID",
			`[TOOL_CALLS]a[CALL_ID]abc123xyz[ARGS]{"x": 1}[TOOL_CALLS]b[ARGS]{}`,
			"", []wantCall{{"a", `{"x":1}`}, {"b", `{}`}}, false},
		{"content before, trailing text",
			"Let me look.[TOOL_CALLS]a[ARGS]{} Done.",
			"Let me look. Done.", []wantCall{{"a", `{}`}}, false},
		{"no marker: bare JSON list", `[{"name": "a", "arguments": {}}]`, "", []wantCall{{"a", `{}`}}, false},
		{"malformed JSON list", `[TOOL_CALLS] [{"name": "a", "arguments": {"x": }}]`,
			`[TOOL_CALLS] [{"name": "a", "arguments": {"x": }}]`, nil, true},
		{"malformed ARGS", `Hi [TOOL_CALLS]a[ARGS]{"x"`, `Hi [TOOL_CALLS]a[ARGS]{"x"`, nil, true},
		{"marker alone", `[TOOL_CALLS]`, `[TOOL_CALLS]`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkParse(t, MistralToolParser{}, tt.in, tt.content, tt.calls, tt.suspect)
		})
	}
}

func TestGenericToolParser(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		content string
		calls   []wantCall
		suspect bool
	}{
		{"no call", "Once upon a time", "Once upon a time", nil, false},
		{"empty", "", "", nil, false},
		{"object", ` {"name": "a", "arguments": {"x": 1}} `, "", []wantCall{{"a", `{"x":1}`}}, false},
		{"array", `[{"name": "a", "parameters": {}}, {"name": "b", "arguments": "{\"z\":null}"}]`,
			"", []wantCall{{"a", `{}`}, {"b", `{"z":null}`}}, false},
		{"OpenAI shape", `{"type": "function", "function": {"name": "a", "arguments": "{}"}}`,
			"", []wantCall{{"a", `{}`}}, false},
		{"code fence", "```json\n{\"name\": \"a\", \"arguments\": {}}\n```", "", []wantCall{{"a", `{}`}}, false},
		{"wrapper tag (Qwen2.5-Coder)", "<tools>\n{\"name\": \"a\", \"arguments\": {}}\n</tools>", "", []wantCall{{"a", `{}`}}, false},
		{"fenced wrapper tag", "```xml\n<response>\n{\"name\": \"a\", \"arguments\": {}}\n</response>\n```", "", []wantCall{{"a", `{}`}}, false},
		{"unknown tag is content", "<answer>{\"name\": \"a\", \"arguments\": {}}</answer>", "<answer>{\"name\": \"a\", \"arguments\": {}}</answer>", nil, false},
		{"arguments first (Hermes 2 Pro)", `{"arguments": {"k": 1}, "name": "a"}`, "", []wantCall{{"a", `{"k":1}`}}, false},
		{"id first is content", `{"id": "c1", "name": "a", "arguments": {}}`, `{"id": "c1", "name": "a", "arguments": {}}`, nil, false},
		{"JSON that is not a call", `{"name": "Bob", "age": 3}`, `{"name": "Bob", "age": 3}`, nil, false},
		{"array of numbers", `[1, 2]`, `[1, 2]`, nil, false},
		{"text before JSON is content", `Here: {"name": "a", "arguments": {}}`, `Here: {"name": "a", "arguments": {}}`, nil, false},
		{"trailing text after a call", `{"name": "a", "arguments": {}} thanks`, `{"name": "a", "arguments": {}} thanks`, nil, true},
		{"malformed", `{"name": "a", "arguments": {"x": 1}`, `{"name": "a", "arguments": {"x": 1}`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkParse(t, GenericToolParser{}, tt.in, tt.content, tt.calls, tt.suspect)
		})
	}
}

// Template snippets in each family's style (the tool-call parts of the
// templates those models ship).
const (
	qwenStyleTemplate    = `{%- if tools %}{{- '<|im_start|>system\n# Tools\n<tools>' }}{%- for tool in tools %}{{- tool | tojson }}{%- endfor %}{{- '</tools>\nFor each function call, return a json object within <tool_call></tool_call> XML tags' }}{%- endif %}{%- for message in messages %}{%- if message.tool_calls %}{%- for tool_call in message.tool_calls %}{{- '\n<tool_call>\n{"name": "' }}{{- tool_call.function.name }}{{- '"}\n</tool_call>' }}{%- endfor %}{%- endif %}{%- endfor %}`
	llama3StyleTemplate  = `{%- for message in messages %}{%- if message.role == "ipython" or message.role == "tool" %}{{- "<|start_header_id|>ipython<|end_header_id|>\n\n" }}{%- elif 'tool_calls' in message %}{{- '<|python_tag|>' }}{%- endif %}{%- endfor %}`
	mistralStyleTemplate = `{%- for message in messages %}{%- if message.tool_calls %}{{- "[TOOL_CALLS][" }}{%- for tool_call in message.tool_calls %}{{- tool_call.function | tojson }}{%- endfor %}{{- "]" + eos_token }}{%- endif %}{%- endfor %}`
)

func TestToolParserFor(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want ToolParser
	}{
		{"Qwen style", qwenStyleTemplate, HermesToolParser{}},
		{"Llama 3 style", llama3StyleTemplate, Llama3ToolParser{}},
		{"Llama 3 ipython role only", `{% if message.role == 'ipython' %}{% endif %}`, Llama3ToolParser{}},
		{"Mistral style", mistralStyleTemplate, MistralToolParser{}},
		{"no template", "", GenericToolParser{}},
		{"fallback template", fallbackSource, GenericToolParser{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ToolParserFor(tt.src); got != tt.want {
				t.Errorf("ToolParserFor = %T, want %T", got, tt.want)
			}
		})
	}
}

// TestToolParserForModels chooses parsers from the templates the shared
// test models carry. None of them has a tool-call syntax, so all get the
// generic parser.
func TestToolParserForModels(t *testing.T) {
	for _, name := range []string{
		"ggml-vocab-deepseek-coder-6.7b-instruct.gguf",
		"ggml-vocab-phi-3.gguf",
		"ggml-vocab-llama-spm.gguf",
		"stories260K.gguf",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(modelsDir, name)
			f, err := gguf.ReadFile(path)
			if err != nil {
				t.Skipf("shared test model not available (tests run without ../shared too): %v", err)
			}
			if got := ToolParserFor(f.ChatTemplate()); got != (GenericToolParser{}) {
				t.Errorf("ToolParserFor = %T, want GenericToolParser", got)
			}
		})
	}
}
