package chat

import (
	"encoding/json"
	"testing"
)

// weatherInstruction is the polyfill's instruction for weatherTool, word
// for word.
const weatherInstruction = "You can call these functions:\n" +
	`{"name": "get_weather", "description": "Get the weather.", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}` + "\n\n" +
	`To call functions, reply with only a JSON object {"name": <function name>, "arguments": <arguments object>}, ` +
	"or a JSON array of such objects to call several. The results come back in a user message."

// noSystem refuses system messages the way Gemma's templates do.
const noSystem = `{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}<{{ m.role }}>{{ m.content }}
{% endfor %}`

func TestPolyfill(t *testing.T) {
	tools := []Tool{weatherTool}
	gen := Options{Tools: tools, AddGenerationPrompt: true}
	weatherCall := `{"name": "get_weather", "arguments": {"city": "Paris"}}`
	tests := []struct {
		name string
		tmpl string
		msgs []Message
		opts Options
		want string
	}{
		{"merged into the system message", chatML, conversation[:2], gen,
			"<|im_start|>system\nYou are terse.\n\n" + weatherInstruction + "<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"},
		{"empty system message", chatML, []Message{{Role: "system"}, conversation[1]}, gen,
			"<|im_start|>system\n" + weatherInstruction + "<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"},
		{"system message added", chatML, toolUse, gen,
			"<|im_start|>system\n" + weatherInstruction + "<|im_end|>\n" +
				"<|im_start|>user\nWeather in Paris?<|im_end|>\n" +
				"<|im_start|>assistant\n" + weatherCall + "<|im_end|>\n" +
				"<|im_start|>user\nResult of tool call call_1 (get_weather):\nsunny<|im_end|>\n" +
				"<|im_start|>assistant\n"},
		{"system refused: first user message", noSystem, toolUse, gen,
			"<user>" + weatherInstruction + "\n\nWeather in Paris?\n<assistant>" + weatherCall + "\n" +
				"<user>Result of tool call call_1 (get_weather):\nsunny\n"},
		{"roles alternate", llama2, toolUse, Options{Tools: tools, BOSToken: "<s>", EOSToken: "</s>"},
			"<s>[INST] <<SYS>>\n" + weatherInstruction + "\n<</SYS>>\n\nWeather in Paris? [/INST] " + weatherCall +
				" </s><s>[INST] Result of tool call call_1 (get_weather):\nsunny [/INST]"},
		{"history without tools", chatML, []Message{
			{Role: "user", Content: "Time and weather?"},
			{Role: "assistant", Content: "Let me check.", ToolCalls: []ToolCall{
				{ID: "c1", Name: "now"},
				{ID: "c2", Name: "get_weather", Arguments: json.RawMessage(`{ "city" : "Paris", "days": [1, 2] }`)},
			}},
			{Role: "tool", ToolCallID: "c1", Content: "21:04"},
			{Role: "tool", ToolCallID: "c2", Name: "weather", Content: "sunny"},
			{Role: "tool", Content: "orphan"},
			{Role: "assistant", Content: "It is 21:04 and sunny."},
			{Role: "tool", ToolCallID: "c9", Content: "late"},
		}, Options{},
			"<|im_start|>user\nTime and weather?<|im_end|>\n" +
				`<|im_start|>assistant` + "\n" + `[{"name": "now", "arguments": {}}, {"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2]}}]<|im_end|>` + "\n" +
				"<|im_start|>user\nResult of tool call c1 (now):\n21:04\n\nResult of tool call c2 (weather):\nsunny\n\nResult of tool call:\norphan<|im_end|>\n" +
				"<|im_start|>assistant\nIt is 21:04 and sunny.<|im_end|>\n" +
				"<|im_start|>user\nResult of tool call c9:\nlate<|im_end|>\n"},
		{"no tools, no instruction", chatML, conversation[1:2], Options{}, "<|im_start|>user\nHi<|im_end|>\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Parse(tt.tmpl)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if tmpl.NativeTools() {
				t.Fatal("NativeTools() = true; the polyfill tests need a template without tools")
			}
			got, err := tmpl.Render(tt.msgs, tt.opts)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if got != tt.want {
				t.Errorf("Render =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// TestPolyfillClientSystemRefused: a system message the client sent is not
// moved; the template's refusal comes back.
func TestPolyfillClientSystemRefused(t *testing.T) {
	tmpl, err := Parse(noSystem)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tmpl.Render(conversation, Options{Tools: []Tool{weatherTool}})
	checkErr(t, "Render", err, ErrTemplate, "chat template: System role not supported")
}
