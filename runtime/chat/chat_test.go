package chat

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

// conversation is the system+user+assistant+user exchange most tests render.
var conversation = []Message{
	{Role: "system", Content: "You are terse."},
	{Role: "user", Content: "Hi"},
	{Role: "assistant", Content: "Hello!"},
	{Role: "user", Content: "What is 2+2?"},
}

const chatML = `{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`

// llama2 is the chat template of meta-llama/Llama-2-7b-chat-hf.
const llama2 = `{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\n' + system_message + '\n<</SYS>>\n\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}`

// llama3 is the chat template of meta-llama/Meta-Llama-3-8B-Instruct.
const llama3 = `{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>

'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>

' }}{% endif %}`

// multiline exercises trim_blocks/lstrip_blocks: block tags on their own
// indented lines leave no whitespace behind, as in HF.
const multiline = `{% for message in messages %}
    {% if message.role == 'user' %}
[U] {{ message.content }}
    {% else %}
[{{ message.role | upper }}] {{ message.content }}
    {% endif %}
{% endfor %}
`

func TestRender(t *testing.T) {
	llama2Opts := Options{BOSToken: "<s>", EOSToken: "</s>", AddGenerationPrompt: true}
	llama3Opts := Options{BOSToken: "<|begin_of_text|>", EOSToken: "<|eot_id|>", AddGenerationPrompt: true}
	tests := []struct {
		name string
		tmpl string
		msgs []Message
		opts Options
		want string
	}{
		{"chatml", chatML, conversation, Options{AddGenerationPrompt: true},
			"<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n" +
				"<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n" +
				"<|im_start|>assistant\n"},
		{"chatml without generation prompt", chatML, conversation[:3], Options{},
			"<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n" +
				"<|im_start|>assistant\nHello!<|im_end|>\n"},
		{"llama2 with system", llama2, conversation, llama2Opts,
			"<s>[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\nHi [/INST] Hello! </s><s>[INST] What is 2+2? [/INST]"},
		{"llama2 strips content", llama2, []Message{{Role: "user", Content: "  Hi there \n"}}, llama2Opts,
			"<s>[INST] Hi there [/INST]"},
		{"llama3", llama3, conversation, llama3Opts,
			"<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>" +
				"<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>" +
				"<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>" +
				"<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>" +
				"<|start_header_id|>assistant<|end_header_id|>\n\n"},
		{"llama3 trims content", llama3, []Message{{Role: "user", Content: "\n  Hi \n"}}, Options{BOSToken: "<|begin_of_text|>"},
			"<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"},
		{"trim and lstrip blocks", multiline, conversation[1:3], Options{},
			"[U] Hi\n[ASSISTANT] Hello!\n"},
		{"one trailing newline dropped", "{{ messages[0].content }}\n", conversation[1:2], Options{}, "Hi"},
		{"only one trailing newline dropped", "{{ messages[0].content }}\n\n", conversation[1:2], Options{}, "Hi\n"},
		{"crlf normalized", "{% for m in messages %}{{ m.content }}\r\n{% endfor %}", conversation[1:3], Options{}, "Hi\nHello!\n"},
		// The template reads tools, so the tool message reaches it as it is (no polyfill).
		{"name and tool_call_id",
			`{% if tools %}{% endif %}{% for m in messages %}{{ m.role }}{% if m.name is defined %}({{ m.name }}){% endif %}{% if m.tool_call_id is defined %}[{{ m.tool_call_id }}]{% endif %}: {{ m.content }}|{% endfor %}{{ messages[-1] | tojson }}`,
			[]Message{{Role: "user", Content: "hi", Name: "ann"}, {Role: "tool", Content: "42", ToolCallID: "call_1"}}, Options{},
			`user(ann): hi|tool[call_1]: 42|{"role": "tool", "content": "42", "tool_call_id": "call_1"}`},
		{"tools is none", `{{ tools is defined }} {{ tools is none }} {{ 'x' if tools else 'no tools' }}`, nil, Options{},
			"True True no tools"},
		{"eos token", `{{ messages[0].content + eos_token }}`, conversation[1:2], Options{EOSToken: "</s>"}, "Hi</s>"},
		{"string methods", `{% set c = messages[0].content %}{{ c.strip().upper() }}|{{ c.split(',') | join('+') }}|{{ c.startswith(' a') }}|{{ c | trim | length }}`,
			[]Message{{Role: "user", Content: " a,b "}}, Options{},
			"A,B| a+b |True|3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Parse(tt.tmpl)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if tmpl.IsFallback() {
				t.Error("IsFallback() = true for a model template")
			}
			if tmpl.Source() != tt.tmpl {
				t.Errorf("Source() = %q, want the template text", tmpl.Source())
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

func TestFallback(t *testing.T) {
	sys := Message{Role: "system", Content: "You are a storyteller."}
	user := Message{Role: "user", Content: "Once upon a time"}
	tests := []struct {
		name string
		msgs []Message
		gen  bool
		want string
	}{
		{"lone user", []Message{user}, false, "Once upon a time"},
		{"lone user with generation prompt", []Message{user}, true, "Once upon a time"},
		{"system and user", []Message{sys, user}, true, "You are a storyteller.\n\nOnce upon a time"},
		{"system and user without generation prompt", []Message{sys, user}, false, "You are a storyteller.\n\nOnce upon a time"},
		{"empty system", []Message{{Role: "system"}, user}, true, "Once upon a time"},
		{"lone system", []Message{sys}, true, "You are a storyteller."},
		{"multi-turn", conversation, true,
			"System: You are terse.\n\nUser: Hi\n\nAssistant: Hello!\n\nUser: What is 2+2?\n\nAssistant:"},
		{"multi-turn without generation prompt", conversation, false,
			"System: You are terse.\n\nUser: Hi\n\nAssistant: Hello!\n\nUser: What is 2+2?"},
		{"user then assistant", conversation[1:3], false, "User: Hi\n\nAssistant: Hello!"},
		{"empty assistant turn", []Message{{Role: "user", Content: "Hi"}, {Role: "assistant"}}, false, "User: Hi\n\nAssistant:"},
		// The fallback has no tool support: the polyfill turns a result into a user turn.
		{"tool turn", []Message{{Role: "user", Content: "Add 2 and 2"}, {Role: "tool", Content: "4", ToolCallID: "c1"}}, true,
			"User: Add 2 and 2\n\nUser: Result of tool call c1:\n4\n\nAssistant:"},
		{"lone assistant", []Message{{Role: "assistant", Content: "Hello!"}}, false, "Assistant: Hello!"},
		{"no messages", nil, true, "Assistant:"},
		{"no messages without generation prompt", nil, false, ""},
	}
	for _, src := range []string{"", " \n\t"} {
		tmpl, err := Parse(src)
		if err != nil {
			t.Fatalf("Parse(%q): %v", src, err)
		}
		if !tmpl.IsFallback() {
			t.Fatalf("Parse(%q).IsFallback() = false", src)
		}
		if tmpl.Source() != fallbackSource {
			t.Errorf("Parse(%q).Source() is not the fallback's source", src)
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				// BOS/EOS are set to show the fallback never emits them.
				got, err := tmpl.Render(tt.msgs, Options{BOSToken: "<s>", EOSToken: "</s>", AddGenerationPrompt: tt.gen})
				if err != nil {
					t.Fatalf("Render: %v", err)
				}
				if got != tt.want {
					t.Errorf("Render =\n%q\nwant\n%q", got, tt.want)
				}
			})
		}
	}
}

// thinking branches on enable_thinking the way Qwen3's template does.
const thinking = `{% for m in messages %}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor %}
{% if add_generation_prompt %}
<|im_start|>assistant
{% if enable_thinking is defined and enable_thinking is false %}
<think>

</think>

{% endif %}
{% endif %}`

func TestKwargs(t *testing.T) {
	msgs := conversation[1:2]
	base := "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
	tests := []struct {
		name   string
		tmpl   string
		kwargs map[string]any
		gen    bool
		want   string
	}{
		{"thinking by default", thinking, nil, true, base},
		{"thinking on", thinking, map[string]any{"enable_thinking": true}, true, base},
		{"thinking off", thinking, map[string]any{"enable_thinking": false}, true, base + "<think>\n\n</think>\n\n"},
		{"nested values", `{{ opts.level }} {{ opts.tags | join(',') }} {{ n + 1 }}`,
			map[string]any{"opts": map[string]any{"level": "high", "tags": []any{"a", "b"}}, "n": 41}, false,
			"high a,b 42"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Parse(tt.tmpl)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got, err := tmpl.Render(msgs, Options{AddGenerationPrompt: tt.gen, Kwargs: tt.kwargs})
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if got != tt.want {
				t.Errorf("Render =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestParseError(t *testing.T) {
	for _, src := range []string{
		"{% for m in messages %}{{ m.content }}",
		"{{ messages[0].content ",
		"{% if add_generation_prompt %}x{% endfor %}",
	} {
		tmpl, err := Parse(src)
		if err == nil {
			t.Errorf("Parse(%q) = %v, want an error", src, tmpl)
			continue
		}
		if !errors.Is(err, ErrTemplate) {
			t.Errorf("Parse(%q) error %v does not wrap ErrTemplate", src, err)
		}
	}
}

func TestRenderError(t *testing.T) {
	tests := []struct {
		name string
		tmpl string
		msgs []Message
		want string // the whole error message
	}{
		{"llama2 role order", llama2, []Message{{Role: "user", Content: "a"}, {Role: "user", Content: "b"}},
			"chat template: Conversation roles must alternate user/assistant/user/assistant/..."},
		{"raise_exception", `{% if messages[0].role != 'user' %}{{ raise_exception('Only user messages are supported.') }}{% endif %}`,
			[]Message{{Role: "system", Content: "s"}}, "chat template: Only user messages are supported."},
		// The jinja library panics on this; Render must turn it into an error.
		{"library panic", `{{ messages | select | list }}`, conversation, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Parse(tt.tmpl)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got, err := tmpl.Render(tt.msgs, Options{BOSToken: "<s>", EOSToken: "</s>"})
			if err == nil {
				t.Fatalf("Render = %q, want an error", got)
			}
			if !errors.Is(err, ErrTemplate) {
				t.Errorf("error %v does not wrap ErrTemplate", err)
			}
			if tt.want != "" && err.Error() != tt.want {
				t.Errorf("error = %q, want %q", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "chat template: ") {
				t.Errorf("error = %q, want the prefix %q", err, "chat template: ")
			}
		})
	}
}

func TestRenderConcurrent(t *testing.T) {
	tmpl, err := Parse(llama3)
	if err != nil {
		t.Fatal(err)
	}
	want, err := tmpl.Render(conversation, Options{BOSToken: "<|begin_of_text|>", AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				got, err := tmpl.Render(conversation, Options{BOSToken: "<|begin_of_text|>", AddGenerationPrompt: true})
				if err != nil || got != want {
					t.Errorf("concurrent Render = %q, %v", got, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
