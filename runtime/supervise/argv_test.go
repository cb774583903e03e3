package supervise

import (
	"reflect"
	"strings"
	"testing"
)

func TestSplitCommand(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"vllm serve {model} --port {port}", []string{"vllm", "serve", "{model}", "--port", "{port}"}},
		{"  llama-server\t-m {model}\n--port {port} ", []string{"llama-server", "-m", "{model}", "--port", "{port}"}},
		{`a 'b c' "d e"`, []string{"a", "b c", "d e"}},
		{`a 'it''s' x`, []string{"a", "its", "x"}},
		{`a "say \"hi\" \\ \$HOME \n"`, []string{"a", `say "hi" \ $HOME \n`}},
		{`a b\ c \'d`, []string{"a", "b c", "'d"}},
		{"a \\\nb", []string{"a", "b"}},
		{`a '' ""`, []string{"a", "", ""}},
		{`a $HOME ~ *.gguf ; rm -rf / && x | y > z`, []string{"a", "$HOME", "~", "*.gguf", ";", "rm", "-rf", "/", "&&", "x", "|", "y", ">", "z"}},
		{`vllm serve {model} --override-generation-config '{"temperature": 0.5}' --port={port}`,
			[]string{"vllm", "serve", "{model}", "--override-generation-config", `{"temperature": 0.5}`, "--port={port}"}},
	} {
		got, err := SplitCommand(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("SplitCommand(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "   ", `a 'b`, `a "b`, `a b\`, `a "b\"`} {
		if got, err := SplitCommand(bad); err == nil {
			t.Errorf("SplitCommand(%q) = %q, want an error", bad, got)
		}
	}
}

func TestTemplateChecksAndExpansion(t *testing.T) {
	for _, bad := range []string{"vllm serve {model}", "{model} --port {port}", "x{port} --port {port}"} {
		words, _ := SplitCommand(bad)
		if err := checkTemplate(words); err == nil {
			t.Errorf("checkTemplate(%q) accepted it", bad)
		}
	}
	words, _ := SplitCommand(`llama-server -m {model} --port {port} --alias '{model} at {port}' --json '{"a":1}'`)
	if err := checkTemplate(words); err != nil {
		t.Fatal(err)
	}
	// A model name full of shell syntax stays one literal argument.
	model := `/models/my model; rm -rf ~ $(id).gguf`
	got := expandArgs(words, model, 8123, "")
	want := []string{"llama-server", "-m", model, "--port", "8123", "--alias", model + " at 8123", "--json", `{"a":1}`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("expandArgs = %q\nwant %q", got, want)
	}
	if !strings.Contains(words[2], "{model}") {
		t.Error("expandArgs changed the template's words")
	}
}
