package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fuzzTemplates are the templates FuzzRender renders with: the fallback, ChatML, and the real
// templates in testdata/templates (Llama 3.1, Qwen 2.5, Qwen 3).
func fuzzTemplates(tb testing.TB) []*Template {
	srcs := []string{"", `{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`}
	paths, _ := filepath.Glob(filepath.Join("testdata", "templates", "*.jinja"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		srcs = append(srcs, string(b))
	}
	var out []*Template
	for _, src := range srcs {
		tmpl, err := Parse(src)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, tmpl)
	}
	return out
}

// fuzzMessages builds a conversation from fuzz input: one message per byte of roles (at most
// 16), whose low bits pick the role and whether it has a name, a tool call (with args as its
// arguments) or reasoning; the contents are the NUL-separated pieces of content, in turn.
func fuzzMessages(roles []byte, content, args string) []Message {
	pieces := strings.Split(content, "\x00")
	var msgs []Message
	for i, b := range roles[:min(len(roles), 16)] {
		m := Message{Role: []string{"system", "user", "assistant", "tool"}[b%4], Content: pieces[i%len(pieces)]}
		if b&4 != 0 {
			m.Name = "n"
		}
		if m.Role == "assistant" && b&8 != 0 {
			m.ToolCalls = []ToolCall{{ID: "call_1", Name: "f", Arguments: json.RawMessage(args)}}
		}
		if m.Role == "assistant" && b&16 != 0 {
			m.Reasoning = pieces[(i+1)%len(pieces)]
		}
		if m.Role == "tool" {
			m.ToolCallID = "call_1"
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// FuzzRender renders arbitrary conversations (contents, tool-call arguments, a tool schema)
// through the fallback and real templates: a render succeeds or fails with one of the
// package's errors, never by a panic in the template engine, and the fallback renders every
// conversation the checks accept, with each message's text in the prompt.
func FuzzRender(f *testing.F) {
	tmpls := fuzzTemplates(f)
	f.Add(uint8(0), []byte{1}, "Once upon a time", "", "", true)
	f.Add(uint8(1), []byte{0, 1, 2, 1}, "Be brief.\x00Hi\x00Hello!\x00How are you?", "", "", true)
	f.Add(uint8(2), []byte{1, 10, 3, 2}, "Weather in Paris?\x00\x00{\"temp\": 21}\x00It is 21.", `{"city": "Paris"}`, `{"type":"object","properties":{"city":{"type":"string"}}}`, true)
	f.Add(uint8(3), []byte{0, 1, 18, 1}, "sys\x00q\x00<think>x</think>a\x00q2", "", "", false)
	f.Add(uint8(4), []byte{1, 26, 3}, "q\x00\x00r", `{"a": [1, {"b": null}]}`, `{"type":"object"}`, true)
	f.Add(uint8(0), []byte{2, 2, 0, 3}, "{{ '%}' }}\x00\\n'\"", "[]", "{", false)
	f.Fuzz(func(t *testing.T, which uint8, roles []byte, content, args, schema string, addGen bool) {
		tmpl := tmpls[int(which)%len(tmpls)]
		msgs := fuzzMessages(roles, content, args)
		var tools []Tool
		if schema != "" {
			tools = []Tool{{Name: "f", Description: "a tool", Parameters: json.RawMessage(schema)}}
		}
		out, err := tmpl.Render(msgs, Options{BOSToken: "<s>", EOSToken: "</s>", AddGenerationPrompt: addGen, Tools: tools})
		if err != nil {
			if !errors.Is(err, ErrTemplate) && !errors.Is(err, ErrToolSchema) && !errors.Is(err, ErrToolArguments) {
				t.Fatalf("error %v wraps none of the package's errors", err)
			}
			if strings.Contains(err.Error(), "render failed") {
				t.Fatalf("the template engine panicked: %v", err)
			}
			if tmpl.IsFallback() && errors.Is(err, ErrTemplate) {
				t.Fatalf("the fallback refused a conversation: %v", err)
			}
			return
		}
		if !tmpl.IsFallback() {
			return
		}
		for i, m := range msgs {
			if len(m.ToolCalls) == 0 && !strings.Contains(out, m.Content) {
				t.Fatalf("the fallback's prompt lacks message %d's content %q:\n%s", i, m.Content, out)
			}
		}
	})
}

// FuzzParse compiles arbitrary template source: it compiles or fails with ErrTemplate, never
// panics or hangs, and what compiles renders a short conversation, with tools, within the
// render limits (guard.go) or fails with one of the package's errors.
func FuzzParse(f *testing.F) {
	for _, tmpl := range fuzzTemplates(f) {
		f.Add(tmpl.Source())
	}
	for _, src := range []string{
		`{% macro m(x) %}{{ x }}{% endmacro %}{{ m(1) }}`,
		`{% for i in range(3) %}{{ i }}{% else %}none{% endfor %}`,
		`{% set ns = namespace(a=[]) %}{% for m in messages %}{% set ns.a = ns.a + [m.role] %}{% endfor %}{{ ns.a | join(",") }}`,
		`{{ messages[0]['content'] | trim | upper }}{{ raise_exception('no') if messages|length > 9 }}`,
		`{%- for m in messages -%}{{ m.content | tojson(indent=2) }}{%- endfor -%}`,
		`{% raw %}{{ x }}{% endraw %}{# c #}{{ "a" ~ 1 }}`,
	} {
		f.Add(src)
	}
	msgs := []Message{{Role: "system", Content: "sys"}, {Role: "user", Content: "hi"},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_1", Name: "f", Arguments: json.RawMessage(`{"x":1}`)}}},
		{Role: "tool", ToolCallID: "call_1", Content: "1"}}
	tools := []Tool{{Name: "f", Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`)}}
	f.Fuzz(func(t *testing.T, src string) {
		// A hang is a failure too: the fuzzer has no deadline of its own.
		done := make(chan error, 1)
		go func() { done <- parseAndRender(src, msgs, tools) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("Parse and Render of %q ran for a minute", Clip(src, 200))
		}
	})
}

// parseAndRender is FuzzParse's check of one source: nil, or what is wrong.
func parseAndRender(src string, msgs []Message, tools []Tool) error {
	tmpl, err := Parse(src)
	if err != nil {
		if !errors.Is(err, ErrTemplate) {
			return fmt.Errorf("parse: %w, which does not wrap ErrTemplate", err)
		}
		return nil
	}
	for _, opts := range []Options{{AddGenerationPrompt: true}, {Tools: tools}} {
		if _, err := tmpl.Render(msgs, opts); err != nil && !errors.Is(err, ErrTemplate) {
			return fmt.Errorf("render: %w, which does not wrap ErrTemplate", err)
		}
	}
	return nil
}

// fuzzParsers are the tool-call parsers FuzzToolParse and FuzzToolStream try on every input.
var fuzzParsers = []ToolParser{HermesToolParser{}, Llama3ToolParser{}, MistralToolParser{}, GenericToolParser{}}

// addToolSeeds seeds a target with the golden model output in testdata/toolcalls and the
// markers of every family.
func addToolSeeds(f *testing.F, add func(text string)) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "toolcalls", "*", "*.txt"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		add(strings.TrimSuffix(string(b), "\n"))
	}
	for _, s := range []string{"", "Once upon a time", hermesOpen + hermesClose, pythonTag + "{", mistralCalls + "a" + mistralArgs + "{}",
		"```json\n[{\"name\": \"a\", \"arguments\": {}}]\n```", "<tools>{\"name\": \"a\", \"parameters\": {}}</tools>", "{\"name\": \"a\"} x </tool_call>"} {
		add(s)
	}
}

// isSubsequence reports whether the bytes of sub appear in s in order.
func isSubsequence(sub, s string) bool {
	for i := 0; i < len(sub); i++ {
		j := strings.IndexByte(s, sub[i])
		if j < 0 {
			return false
		}
		s = s[j+1:]
	}
	return true
}

func squash(s string) string { return strings.Join(strings.Fields(s), "") }

// FuzzToolParse runs every tool-call parser on arbitrary text: no panic; a reply without calls
// comes back as its content unchanged (suspect text included: nothing is dropped); with calls,
// the content is text of the reply, in order; each call has a name and a JSON object for
// arguments; suspect text comes with an error wrapping ErrToolCall, and only then.
func FuzzToolParse(f *testing.F) {
	addToolSeeds(f, func(s string) { f.Add(s) })
	f.Fuzz(func(t *testing.T, text string) {
		for _, p := range fuzzParsers {
			content, calls, suspect, err := p.Parse(text)
			if (err != nil) != (suspect != "") || err != nil && !errors.Is(err, ErrToolCall) {
				t.Fatalf("%T: suspect %q with error %v", p, suspect, err)
			}
			if len(calls) == 0 && content != text {
				t.Fatalf("%T: no calls, content %q, want the text unchanged", p, content)
			}
			if !isSubsequence(content, text) {
				t.Fatalf("%T: content %q is not text of the reply", p, content)
			}
			for _, c := range calls {
				var obj map[string]json.RawMessage
				if c.Name == "" || strings.TrimSpace(c.Name) != c.Name || json.Unmarshal(c.Arguments, &obj) != nil || obj == nil || !callIDShape.MatchString(c.ID) {
					t.Fatalf("%T: bad call %+v", p, c)
				}
			}
		}
	})
}

// streamed is what a ToolStream made of a reply.
type streamed struct {
	content, suspect string
	calls            []ToolCall
}

// streamPieces feeds text to a ToolStream for p, cut where cuts say (each byte is the length of
// the next piece, 0 to 15), and reassembles the deltas.
func streamPieces(t *testing.T, p ToolParser, text string, cuts []byte) streamed {
	s := NewToolStream(p)
	var out streamed
	var content strings.Builder
	collect := func(c string, deltas []ToolCallDelta) {
		content.WriteString(c)
		for _, d := range deltas {
			switch {
			case d.Index == len(out.calls) && d.Name != "":
				out.calls = append(out.calls, ToolCall{Name: d.Name, ID: d.ID})
			case d.Index == len(out.calls)-1 && d.Name == "" && d.ID == "":
				out.calls[d.Index].Arguments = append(out.calls[d.Index].Arguments, d.Arguments...)
			default:
				t.Fatalf("%T %q: delta %+v out of order", p, text, d)
			}
		}
	}
	rest := text
	for _, c := range cuts {
		n := min(int(c%16), len(rest))
		collect(s.Feed(rest[:n]))
		rest = rest[n:]
	}
	collect(s.Feed(rest))
	c, d, suspect, err := s.Close()
	collect(c, d)
	if (err != nil) != (suspect != "") {
		t.Fatalf("%T %q: suspect %q with error %v", p, text, suspect, err)
	}
	out.content, out.suspect = content.String(), suspect
	return out
}

// FuzzToolStream feeds arbitrary text to every parser's ToolStream in arbitrary pieces: the
// result is the same as feeding it in one piece, and agrees with Parse on the whole reply (the
// same calls, the same suspect verdict, the same content; with calls, up to whitespace next to
// them). The one documented exception, content before a Hermes </tool_call> that had no
// <tool_call>, is compared only with the one-piece stream.
func FuzzToolStream(f *testing.F) {
	addToolSeeds(f, func(s string) { f.Add(s, []byte{1, 2, 3, 5, 8}) })
	f.Add("<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>", []byte{0, 1, 0, 13, 1})
	f.Fuzz(func(t *testing.T, text string, cuts []byte) {
		for _, p := range fuzzParsers {
			whole := streamPieces(t, p, text, nil)
			got := streamPieces(t, p, text, cuts)
			if !sameStream(got, whole, false) {
				t.Fatalf("%T %q cut %v: stream gave %+v, in one piece %+v", p, text, cuts, got, whole)
			}
			if _, ok := p.(HermesToolParser); ok && hermesUnopenedClose(text) {
				continue
			}
			content, calls, suspect, _ := p.Parse(text)
			if want := (streamed{content: content, calls: calls, suspect: suspect}); !sameStream(got, want, len(calls) > 0) {
				t.Fatalf("%T %q cut %v: stream gave %+v, Parse %+v", p, text, cuts, got, want)
			}
		}
	})
}

// sameStream compares two results, calls by name and arguments (ids are random), content up
// to whitespace when loose.
func sameStream(a, b streamed, loose bool) bool {
	if len(a.calls) != len(b.calls) || (a.suspect != "") != (b.suspect != "") {
		return false
	}
	for i := range a.calls {
		if a.calls[i].Name != b.calls[i].Name || string(a.calls[i].Arguments) != string(b.calls[i].Arguments) {
			return false
		}
	}
	if loose {
		return squash(a.content) == squash(b.content)
	}
	return a.content == b.content
}
