package chat

import (
	"errors"
	"strings"
	"testing"
)

// TestWhitespace checks whitespace control against Jinja2 with HF's settings
// (trim_blocks, lstrip_blocks). Every want was produced by Python's jinja2
// 3.1 rendering the same template and messages.
func TestWhitespace(t *testing.T) {
	msgs := []Message{{Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello!"}}
	tests := []struct {
		name, tmpl, want string
	}{
		// The jinja library alone drops this "\n": the for tag's
		// trim_blocks reaches past the expression.
		{"trim_blocks only beside the tag", "{% for m in messages %}{{ m.content }}\n{% endfor %}",
			"Hi\nHello!\n"},
		// The library alone strips the space after [INST]: the "-" reaches
		// past the expression.
		{"minus only beside the tag", "[INST] {{ messages[0].content }}{%- if true %}!{% endif %}",
			"[INST] Hi!"},
		{"indented blocks", "{% for m in messages %}\n  {{ m.role }}\n  {% if m.role == \"user\" %}\n    U:{{ m.content }}\n  {% endif %}\n{% endfor %}\n",
			"  user\n    U:Hi\n  assistant\n"},
		{"comments, plus markers and raw", "{# comment #}\n  {% if true %}x{% endif %}\n{%+ if true %}y{% endif +%}\nz {% raw %}\n  {{ raw }} {% endraw %}\n",
			"xy\nz \n  {{ raw }} "},
		{"minus markers", "{{- bos_token -}}\n\n{%- for m in messages -%}\n   {{ m.role }}: {{ m.content -}}  \n\n {% endfor -%}\n  {{ \"\\n\" }}end\n",
			"<BOS>user: Hiassistant: Hello!\nend"},
		{"mid-line tags keep spaces", "a  {% if true %}  b  {% endif %}  c\n\t{% set x = 1 %}\n\t{{ x }}{# c #}\n\t{#- c -#}  d {%- raw -%}  {% x %}  {%- endraw %}\n  {#+ c +#}\nx\n",
			"a    b    c\n\t1d{% x %}  \nx"},
		{"quotes and backslashes in text", "{{ 'it\\'s' }} \\ ' \" {% if true %}\\n{% endif %}\n\n",
			"it's \\ ' \" \\n"},
		{"macro and set block", "{%- set ns = namespace(sys='') -%}\n{%- macro show(m) -%}\n    <{{ m.role }}>\n    {{ m.content }}\n{% endmacro -%}\n{% set block %}\n  {% for m in messages %}\n{{ show(m) }}\n  {% endfor %}\n{% endset %}\n{{ block | trim }}|{{ block }}\n{% if add_generation_prompt %}\n  <assistant>\n{% endif %}\n",
			"<user>\n    Hi\n\n<assistant>\n    Hello!|<user>\n    Hi\n\n<assistant>\n    Hello!\n\n\n  <assistant>\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Parse(tt.tmpl)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got, err := tmpl.Render(msgs, Options{BOSToken: "<BOS>", EOSToken: "<EOS>", AddGenerationPrompt: true})
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if got != tt.want {
				t.Errorf("Render =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// TestParseErrorLine checks that errors name the line of the original
// template, although Parse compiles a rewritten one.
func TestParseErrorLine(t *testing.T) {
	tests := []struct {
		tmpl, want string
	}{
		{"a\n\n  {%- if x %}\n{{ y( }}\n{% endif %}", "line 4"},
		{"{# a\nb #}\n\n{% for %}", "line 4"},
		{"{% if x %}\n\n{% endfor %}", "line 3"},
		{"a\n{{ x", "unclosed expression tag at line 2"},
		{"x\n{% raw %}\n", "missing end of raw directive at line 2"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.tmpl)
		if err == nil || !errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) error = %v, want one wrapping ErrTemplate that says %q", tt.tmpl, err, tt.want)
		}
	}
}
