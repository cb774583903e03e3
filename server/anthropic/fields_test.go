package anthropic_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

// ok posts a Messages request and returns the reply; the status must be 200.
func (f *fixture) ok(t *testing.T, body string) wireReply {
	t.Helper()
	resp, b := f.do(t, http.MethodPost, "/v1/messages", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var r wireReply
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// lastPrompt is the prompt of the engine's latest request.
func (f *fixture) lastPrompt(t *testing.T) string {
	t.Helper()
	reqs := f.eng.Requests()
	if len(reqs) == 0 {
		t.Fatal("no request reached the engine")
	}
	return reqs[len(reqs)-1].Prompt
}

// warningsOf joins a reply's superfluid.warnings.
func warningsOf(r wireReply) string {
	if r.Superfluid == nil {
		return ""
	}
	return strings.Join(r.Superfluid.Warnings, "; ")
}

// onlyFirstSystem refuses a system message anywhere but first, as Mistral's templates do.
const onlyFirstSystem = `{% for m in messages %}{% if m.role == 'system' and not loop.first %}{{ raise_exception('System messages are only allowed first') }}{% endif %}` +
	`<{{ m.role }}>{{ m.content }}</{{ m.role }}>{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}`

// TestSystemMessages: a system message inside messages is a system turn at its place (its
// cache_control ignored), joins the top-level system when it follows it, and is folded into
// a user turn for a template that refuses it there.
func TestSystemMessages(t *testing.T) {
	const reminder = `{"role":"system","content":[{"type":"text","text":"Reminder.","cache_control":{"type":"ephemeral"}}]}`
	tests := []struct {
		name, tmpl, body, want string
	}{
		{"at its place", "", msgs(`[{"role":"user","content":"Hi"},` + reminder + `]`),
			"<|im_start|>user\nHi<|im_end|>\n<|im_start|>system\nReminder.<|im_end|>\n<|im_start|>assistant\n"},
		{"between turns, a string", "", msgs(`[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello"},{"role":"system","content":"Be brief."},{"role":"user","content":"Bye"}]`),
			"<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello<|im_end|>\n<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n"},
		{"after the top-level system", "", `{"model":"fake","max_tokens":10,"system":"Be brief.","messages":[` + reminder + `,{"role":"user","content":"Hi"}]}`,
			rendered("Be brief.\n\nReminder.", "Hi")},
		{"folded for a template that refuses it", onlyFirstSystem, `{"model":"fake","max_tokens":10,"system":"Be brief.","messages":[{"role":"user","content":"Hi"},` + reminder + `]}`,
			"<system>Be brief.</system><user>Hi\n\nReminder.</user><assistant>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t, config{template: tt.tmpl})
			f.ok(t, tt.body)
			if p := f.lastPrompt(t); p != tt.want {
				t.Errorf("prompt %q\nwant   %q", p, tt.want)
			}
		})
	}
}

// effortTemplate is ChatML that shows the reasoning_effort it gets.
const effortTemplate = `{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}{% endfor %}` +
	`{% if reasoning_effort is defined %}[effort={{ reasoning_effort }}]{% endif %}`

// TestOutputConfig: effort reaches the template as reasoning_effort (chat_template_kwargs
// wins), and a json_schema format (output_config.format or the beta's output_format)
// constrains the engine's output.
func TestOutputConfig(t *testing.T) {
	f := setup(t, config{template: effortTemplate})
	for _, tt := range []struct{ extra, want string }{
		{`"output_config":{"effort":"high"}`, "[effort=high]"},
		{`"output_config":{"effort":"max"}`, "[effort=max]"},
		{`"output_config":{"effort":"high"},"chat_template_kwargs":{"reasoning_effort":"low"}`, "[effort=low]"},
	} {
		f.ok(t, body(tt.extra))
		if p := f.lastPrompt(t); !strings.HasSuffix(p, tt.want) {
			t.Errorf("%s: prompt %q, want it to end with %q", tt.extra, p, tt.want)
		}
	}
	f.ok(t, body(""))
	if p := f.lastPrompt(t); strings.Contains(p, "[effort=") {
		t.Errorf("no effort asked, prompt %q", p)
	}

	const schema = `{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`
	for _, extra := range []string{
		`"output_config":{"format":{"type":"json_schema","schema":` + schema + `}}`,
		`"output_format":{"type":"json_schema","schema":` + schema + `}`,
	} {
		f.ok(t, body(extra))
		reqs := f.eng.Requests()
		if req := reqs[len(reqs)-1]; req.Format != llm.FormatSchema || string(req.Schema) != schema {
			t.Errorf("%s: engine format %q schema %s", extra, req.Format, req.Schema)
		}
	}

	bad := []struct{ extra, msg string }{
		{`"output_config":{"effort":"extreme"}`, `output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max', got "extreme"`},
		{`"output_config":{"format":{"type":"json_object"}}`, `output_config.format.type: Input should be 'json_schema', got "json_object"`},
		{`"output_config":{"format":{"type":"json_schema"}}`, "output_config.format.schema: Field required"},
		{`"output_config":{"format":{"type":"json_schema","schema":"object"}}`, "output_config.format.schema: Input should be a valid dictionary"},
		{`"output_config":{"format":"json"}`, "output_config.format: Input should be a valid dictionary"},
		{`"output_format":{"schema":{}}`, "output_format.type: Field required"},
	}
	n := len(f.eng.Requests())
	for _, tt := range bad {
		resp, b := f.do(t, http.MethodPost, "/v1/messages", body(tt.extra))
		checkError(t, resp, b, wantError{400, invalidReq, tt.msg})
	}
	if len(f.eng.Requests()) != n {
		t.Error("a bad output_config reached the engine")
	}
}

// TestContextManagement: clear_thinking keeps the reasoning of the last N thinking turns in
// the prompt (1 by default, "all" keeps all); an edit this server does not apply is a warning.
func TestContextManagement(t *testing.T) {
	history := msgs(`[{"role":"user","content":"One"},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"First.","signature":"s"},{"type":"text","text":"1"}]},` +
		`{"role":"user","content":"Two"},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"Second.","signature":"s"},{"type":"text","text":"2"}]},` +
		`{"role":"user","content":"Three"}]`)
	with := func(cm string) string { return strings.TrimSuffix(history, "}") + `,"context_management":` + cm + "}" }
	tests := []struct {
		name, body    string
		first, second bool // the reasoning kept in the prompt
		warning       string
	}{
		{"none", history, true, true, ""},
		{"keep all", with(`{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]}`), true, true, ""},
		{"default keep", with(`{"edits":[{"type":"clear_thinking_20251015"}]}`), false, true, ""},
		{"keep 0 turns", with(`{"edits":[{"type":"clear_thinking_20251015","keep":{"type":"thinking_turns","value":0}}]}`), false, false, ""},
		{"keep 2 turns", with(`{"edits":[{"type":"clear_thinking_20251015","keep":{"type":"thinking_turns","value":2}}]}`), true, true, ""},
		{"clear_tool_uses", with(`{"edits":[{"type":"clear_tool_uses_20250919","trigger":{"type":"input_tokens","value":30000}}]}`), true, true,
			`context_management.edits.0: "clear_tool_uses_20250919" is not applied by this server`},
	}
	f := setup(t, config{template: hermesTemplate})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.ok(t, tt.body)
			p := f.lastPrompt(t)
			if strings.Contains(p, "<think>First.</think>") != tt.first || strings.Contains(p, "<think>Second.</think>") != tt.second {
				t.Errorf("prompt %q; want first %v, second %v", p, tt.first, tt.second)
			}
			if w := warningsOf(r); (tt.warning == "") != (w == "") || !strings.Contains(w, tt.warning) {
				t.Errorf("warnings %q, want %q", w, tt.warning)
			}
		})
	}
	for _, tt := range []struct{ cm, msg string }{
		{`{"edits":[{"type":"clear_thinking_20251015","keep":"some"}]}`, `context_management.edits.0.keep: Input should be "all" or {"type":"thinking_turns","value":N}`},
		{`{"edits":[{"type":"clear_thinking_20251015","keep":{"type":"thinking_turns","value":-1}}]}`, "context_management.edits.0.keep: Input should be"},
		{`{"edits":[{"keep":"all"}]}`, "context_management.edits.0.type: Field required"},
		{`{"edits":["clear"]}`, "context_management.edits.0: Input should be a valid dictionary"},
		{`{"edits":"clear"}`, "context_management.edits: Input should be a valid list"},
	} {
		resp, b := f.do(t, http.MethodPost, "/v1/messages", with(tt.cm))
		checkError(t, resp, b, wantError{400, invalidReq, tt.msg})
	}
}
