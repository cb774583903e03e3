package chat

import (
	"errors"
	"strings"
	"testing"
)

// TestTemplateLimits renders hostile templates, as a model file may carry them: each fails
// with an error wrapping ErrTemplate that says which limit it hit, where the jinja library
// alone overflows the stack (killing the process), loops for hours or parses for minutes.
func TestTemplateLimits(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"macro calling itself", `{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}`, "macros nested more than 64 deep"},
		{"macros calling each other", `{% macro a(n) %}{{ b(n) }}{% endmacro %}{% macro b(n) %}x{{ a(n) }}{% endmacro %}{{ a(1) }}`, "macros nested"},
		{"macro through caller", `{% macro m() %}{% call m() %}{{ caller() }}{% endcall %}{% endmacro %}{{ m() }}`, "macros nested"},
		{"huge range", `{% for i in range(100000000000) %}{% endfor %}`, "range: more than 100000 numbers"},
		{"negative huge range", `{% for i in range(0, -100000000000, -1) %}x{% endfor %}`, "range: more than"},
		{"nested loops", `{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}`, "more than 1048576 loop iterations"},
		{"wide macro calls", `{% macro m() %}{% endmacro %}{% for i in range(100000) %}{% for j in range(20) %}{{ m() }}{% endfor %}{% endfor %}`, "more than 1048576"},
		{"deep blocks", strings.Repeat("{% if true %}", 20000) + "x" + strings.Repeat("{% endif %}", 20000), "blocks nested more than 100 deep"},
		{"deep brackets", "{{ " + strings.Repeat("[", 20000) + "1" + strings.Repeat("]", 20000) + " }}", "brackets nested 20000 deep"},
		{"many tags", strings.Repeat("{% if true %}x{% endif %}", 5001), "more than 10000 tags"},
		{"reserved name", `{% set __superfluid_step = 1 %}`, "reserved name prefix"},
		{"range with a bad step", `{{ range(1, 2, 0) }}`, "step must not be zero"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Parse(tt.src)
			if err == nil {
				_, err = tmpl.Render([]Message{{Role: "user", Content: "hi"}}, Options{AddGenerationPrompt: true})
			}
			if !errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrTemplate saying %q", err, tt.want)
			}
		})
	}
}

// TestTemplateRangeAsPython checks the bounded range against Python's.
func TestTemplateRangeAsPython(t *testing.T) {
	for src, want := range map[string]string{
		`{{ range(3) | join(",") }}`:                 "0,1,2",
		`{{ range(1, 4) | join(",") }}`:              "1,2,3",
		`{{ range(10, 0, -3) | join(",") }}`:         "10,7,4,1",
		`{{ range(0) | length }}`:                    "0",
		`{{ range(5, 1) | length }}`:                 "0",
		`{{ range("3") | join(",") }}`:               "0,1,2",
		`{{ range(messages|length) | list }}`:        "[0]",
		`{% for i in range(2) %}{{ i }}{% endfor %}`: "01",
	} {
		tmpl, err := Parse(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		got, err := tmpl.Render([]Message{{Role: "user", Content: "hi"}}, Options{})
		if err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", src, got, err, want)
		}
	}
}
