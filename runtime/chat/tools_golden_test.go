package chat

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var updateTemplates = flag.Bool("update", false, "rewrite testdata/templates/*.golden from the renderer's output")

// goldenTools are the tools every golden conversation declares: one with a
// described schema, one with neither description nor parameters.
var goldenTools = []Tool{
	{Name: "get_weather", Description: "Get the current weather for a city.",
		Parameters: json.RawMessage(`{"type": "object", "properties": {"city": {"type": "string", "description": "City name, e.g. Paris"}, ` +
			`"unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}`)},
	{Name: "get_time"},
}

// goldenConversations: "single" is one call and its result (the shape every
// tool template accepts); "parallel" has a system message, two calls in one
// turn, their results, an answer, a follow-up, and a call with text and
// reasoning beside it whose result carries the tool's name (Qwen3 renders
// reasoning after the last user message only).
var goldenConversations = []struct {
	name string
	msgs []Message
}{
	{"single", []Message{
		{Role: "user", Content: "What's the weather in Paris?"},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}},
		{Role: "tool", ToolCallID: "call_1", Content: `{"temperature": 22, "condition": "sunny"}`},
	}},
	{"parallel", []Message{
		{Role: "system", Content: "You are a helpful assistant."},
		{Role: "user", Content: "What's the weather in Paris and in Tokyo?"},
		{Role: "assistant", ToolCalls: []ToolCall{
			{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
			{ID: "call_2", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Tokyo","unit":"celsius"}`)},
		}},
		{Role: "tool", ToolCallID: "call_1", Content: `{"temperature": 22, "condition": "sunny"}`},
		{Role: "tool", ToolCallID: "call_2", Content: `{"temperature": 18, "condition": "rain"}`},
		{Role: "assistant", Content: "Paris is sunny at 22 °C; Tokyo has rain at 18 °C."},
		{Role: "user", Content: "And what time is it in Tokyo?"},
		{Role: "assistant", Content: "Let me check.", Reasoning: "The user wants the time in Tokyo: call get_time.", ToolCalls: []ToolCall{{ID: "call_3", Name: "get_time", Arguments: json.RawMessage(`{}`)}}},
		{Role: "tool", ToolCallID: "call_3", Name: "get_time", Content: "21:04"},
	}},
}

// TestRenderToolsGolden renders the golden conversations with tools through
// native templates (Qwen2.5 and Llama 3.1 as written from the published
// templates, Qwen3-8B's real template) and through the polyfill (DeepSeek
// Coder's real template from its GGUF, and the fallback). A render error
// is golden too: Llama 3.1 refuses parallel calls, as it does under HF.
// The native outputs were checked against what HF's apply_chat_template
// renders for the same input (Llama 3.1's tool listing needs tojson.go).
func TestRenderToolsGolden(t *testing.T) {
	type goldenTemplate struct {
		name   string
		native bool
		load   func(t *testing.T) (*Template, Options)
	}
	fromFile := func(file string, opts Options) func(t *testing.T) (*Template, Options) {
		return func(t *testing.T) (*Template, Options) {
			src, err := os.ReadFile(filepath.Join("testdata", "templates", file))
			if err != nil {
				t.Fatal(err)
			}
			tmpl, err := Parse(string(src))
			if err != nil {
				t.Fatalf("Parse %s: %v", file, err)
			}
			return tmpl, opts
		}
	}
	templates := []goldenTemplate{
		{"qwen2.5", true, fromFile("qwen2.5.jinja", Options{})},
		{"qwen3", true, fromFile("qwen3.jinja", Options{})},
		{"llama3.1", true, fromFile("llama3.1.jinja", Options{BOSToken: "<|begin_of_text|>", EOSToken: "<|eot_id|>"})},
		// Needs the shared models; loadModel skips without them.
		{"deepseek-coder", false, func(t *testing.T) (*Template, Options) {
			return loadModel(t, "ggml-vocab-deepseek-coder-6.7b-instruct.gguf")
		}},
		{"fallback", false, func(t *testing.T) (*Template, Options) {
			tmpl, err := Parse("")
			if err != nil {
				t.Fatal(err)
			}
			return tmpl, Options{}
		}},
	}
	for _, gt := range templates {
		for _, conv := range goldenConversations {
			t.Run(gt.name+"/"+conv.name, func(t *testing.T) {
				tmpl, opts := gt.load(t)
				if tmpl.NativeTools() != gt.native {
					t.Errorf("NativeTools() = %v, want %v", tmpl.NativeTools(), gt.native)
				}
				opts.Tools = goldenTools
				opts.AddGenerationPrompt = true
				got, err := tmpl.Render(conv.msgs, opts)
				if err != nil {
					got = "error: " + err.Error() + "\n"
				}
				path := filepath.Join("testdata", "templates", gt.name+"."+conv.name+".golden")
				if *updateTemplates {
					if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run with -update to write it)", err)
				}
				if got != string(want) {
					t.Errorf("Render =\n%s\nwant (%s)\n%s", got, path, want)
				}
			})
		}
	}
}
