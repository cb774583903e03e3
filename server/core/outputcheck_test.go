package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/schema"
)

// chatOnce runs req on a fake engine that replies with reply, and returns the reply gathered,
// its Done and the request the engine got.
func chatOnce(t *testing.T, reply string, req *ChatRequest) (*Reply, llm.Done, llm.Request) {
	t.Helper()
	fake := enginetest.New(4096, reply)
	svc := New(Config{}, nil, fakeModel(t, fake))
	var r Reply
	var done llm.Done
	_, err := svc.Chat(context.Background(), req, func(_ int, ev llm.Event) error {
		r.Add(ev)
		if ev.Done != nil {
			done = *ev.Done
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	return &r, done, fake.Requests()[0]
}

// TestForcedCallUnexpressibleSchema: a forced call whose parameters the grammar cannot express
// is served; the limit is left out of the grammar and checked on the arguments, and a limit
// nothing can check is named in the warning.
func TestForcedCallUnexpressibleSchema(t *testing.T) {
	tests := []struct {
		name, params, reply string
		warning             string // "" for none
	}{
		{"maxLength 524288 (Claude Code's Workflow), kept", `{"type":"object","properties":{"script":{"type":"string","maxLength":524288}},"required":["script"]}`,
			`{"name":"f","arguments":{"script":"echo hi"}}`, ""},
		{"pattern with \\d, broken", `{"type":"object","properties":{"id":{"type":"string","pattern":"^\\d{3}$"}}}`,
			`{"name":"f","arguments":{"id":"12a"}}`, `break the tool's parameters schema where the grammar engine could not enforce it: /id: pattern "^\\d{3}$"`},
		{"pattern with a backreference", `{"type":"object","properties":{"w":{"type":"string","pattern":"^(a)\\1$"}}}`,
			`{"name":"f","arguments":{"w":"aa"}}`, `nothing checked: tool "f" #/properties/w/pattern`},
		{"unknown format", `{"type":"object","properties":{"c":{"type":"string","format":"x-color"}}}`,
			`{"name":"f","arguments":{"c":"red"}}`, `nothing checked: tool "f" #/properties/c/format: the grammar engine does not know the format "x-color"`},
		{"minLength beyond the limit, broken", `{"type":"object","properties":{"s":{"type":"string","minLength":3000}}}`,
			`{"name":"f","arguments":{"s":"short"}}`, `/s: minLength is 3000, but the string has 5 characters`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := userChat("go")
			req.Tools = []chat.Tool{{Name: "f", Parameters: json.RawMessage(tt.params)}}
			req.ToolChoice = ToolChoice{Mode: ToolFunction, Name: "f"}
			reply, done, sent := chatOnce(t, tt.reply, req)
			if len(reply.ToolCalls) != 1 || reply.ToolCalls[0].Name != "f" {
				t.Fatalf("calls = %+v, want one call to f", reply.ToolCalls)
			}
			if strings.Contains(string(sent.Schema), "524288") || strings.Contains(string(sent.Schema), `\\1`) {
				t.Errorf("the grammar got the limit: %s", sent.Schema)
			}
			if tt.warning == "" && done.Warning != "" || !strings.Contains(done.Warning, tt.warning) {
				t.Errorf("warning = %q, want %q", done.Warning, tt.warning)
			}
		})
	}
}

// TestAutoToolsUnexpressibleSchema: with tool_choice auto the schema is only shown to the model:
// no grammar, no refusal.
func TestAutoToolsUnexpressibleSchema(t *testing.T) {
	req := userChat("go")
	req.Tools = []chat.Tool{{Name: "Workflow", Parameters: json.RawMessage(`{"type":"object","properties":{"script":{"type":"string","maxLength":524288,"pattern":"^(a)\\1$"}}}`)}}
	_, done, sent := chatOnce(t, "Hello", req)
	if sent.Format != "" || done.Warning != "" {
		t.Errorf("format %q warning %q, want no grammar and no warning", sent.Format, done.Warning)
	}
}

// TestResponseFormatWithForcedCall: a response format beside a forced tool_choice is served;
// the call's grammar wins for this reply.
func TestResponseFormatWithForcedCall(t *testing.T) {
	req := userChat("go")
	req.Tools = []chat.Tool{{Name: "f", Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`)}}
	req.ToolChoice = ToolChoice{Mode: ToolRequired}
	req.Generation.Format, req.Generation.Schema = llm.FormatSchema, json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}}}`)
	reply, done, sent := chatOnce(t, `[{"name":"f","arguments":{"x":1}}]`, req)
	if len(reply.ToolCalls) != 1 || done.FinishReason != llm.FinishToolCalls {
		t.Errorf("calls %+v finish %q, want one call and tool_calls", reply.ToolCalls, done.FinishReason)
	}
	if !strings.Contains(string(sent.Schema), `"const":"f"`) {
		t.Errorf("the grammar is not the call's: %s", sent.Schema)
	}
}

// TestResponseFormatRelaxed: a response format the grammar cannot express whole is served and
// its output checked.
func TestResponseFormatRelaxed(t *testing.T) {
	req := userChat("go")
	req.Generation.Format, req.Generation.Schema = llm.FormatSchema, json.RawMessage(`{"type":"object","properties":{"tags":{"type":"array","maxItems":5000,"minItems":2500}}}`)
	_, done, sent := chatOnce(t, `{"tags":[1]}`, req)
	if strings.Contains(string(sent.Schema), "5000") || !strings.Contains(string(sent.Schema), `"minItems":2000`) {
		t.Errorf("grammar schema %s, want maxItems left out and minItems clamped", sent.Schema)
	}
	if !strings.Contains(done.Warning, "/tags: minItems is 2500, but the array has 1 items") {
		t.Errorf("warning = %q", done.Warning)
	}
}

// TestResponseFormatWithAutoTools: a response format beside tool_choice auto takes the format's
// JSON or a call: after a tool result the reply follows the format, and a call still parses.
func TestResponseFormatWithAutoTools(t *testing.T) {
	for _, tt := range []struct {
		name, reply string
		calls       int
		warning     string
	}{
		{"a text reply in the format", `{"summary":"sunny"}`, 0, ""},
		{"a text reply that breaks a relaxed limit", `{"summary":"sunny and warm"}`, 0, "/summary: pattern"},
		{"a call", `[{"name":"f","arguments":{"x":1}}]`, 1, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := userChat("go")
			req.Messages = append(req.Messages,
				chat.Message{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "call_1", Name: "f", Arguments: json.RawMessage(`{"x":1}`)}}},
				chat.Message{Role: "tool", ToolCallID: "call_1", Content: "sunny"})
			req.Tools = []chat.Tool{{Name: "f", Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`)}}
			format := `{"type":"object","properties":{"summary":{"type":"string","maxLength":5000}},"required":["summary"]}`
			if tt.warning != "" {
				format = `{"type":"object","properties":{"summary":{"type":"string","maxLength":5000,"pattern":"^\\w+$"}},"required":["summary"]}`
			}
			req.Generation.Format, req.Generation.Schema = llm.FormatSchema, json.RawMessage(format)
			reply, done, sent := chatOnce(t, tt.reply, req)
			if !strings.HasPrefix(string(sent.Schema), `{"anyOf":[{"type":"object","properties":{"summary"`) || !strings.Contains(string(sent.Schema), `"const":"f"`) {
				t.Errorf("grammar schema %s, want the format or a call", sent.Schema)
			}
			if len(reply.ToolCalls) != tt.calls || tt.calls == 0 && reply.Content() != tt.reply {
				t.Errorf("calls %+v content %q", reply.ToolCalls, reply.Content())
			}
			if tt.warning == "" && done.Warning != "" || !strings.Contains(done.Warning, tt.warning) {
				t.Errorf("warning %q, want %q", done.Warning, tt.warning)
			}
		})
	}
}

// TestUncheckedOnlyForTheToolCalled: what nothing enforces in one tool's schema is named only
// in replies that call that tool.
func TestUncheckedOnlyForTheToolCalled(t *testing.T) {
	req := userChat("go")
	req.Tools = []chat.Tool{
		{Name: "paint", Parameters: json.RawMessage(`{"type":"object","properties":{"c":{"type":"string","format":"x-color"}}}`)},
		{Name: "now", Parameters: json.RawMessage(`{"type":"object"}`)},
	}
	req.ToolChoice = ToolChoice{Mode: ToolRequired}
	for reply, want := range map[string]string{
		`[{"name":"now","arguments":{}}]`:            "",
		`[{"name":"paint","arguments":{"c":"red"}}]`: `tool "paint" #/properties/c/format`,
	} {
		_, done, _ := chatOnce(t, reply, req)
		if want == "" && done.Warning != "" || !strings.Contains(done.Warning, want) {
			t.Errorf("%s: warning %q, want %q", reply, done.Warning, want)
		}
	}
}

// TestUncheckedInACutCall: a call cut by the cap still names what nothing enforced in its tool.
func TestUncheckedInACutCall(t *testing.T) {
	req := userChat("go")
	req.Tools = []chat.Tool{{Name: "paint", Parameters: json.RawMessage(`{"type":"object","properties":{"c":{"type":"string","format":"x-color"}}}`)}}
	req.ToolChoice = ToolChoice{Mode: ToolFunction, Name: "paint"}
	req.Generation.MaxTokens = 30
	reply, done, _ := chatOnce(t, `{"name":"paint","arguments":{"c":"a long colour name"}}`, req)
	if len(reply.ToolCalls) != 1 || done.FinishReason != llm.FinishLength || !strings.Contains(done.Warning, `tool "paint" #/properties/c/format`) {
		t.Errorf("calls %+v finish %q warning %q", reply.ToolCalls, done.FinishReason, done.Warning)
	}
}

// TestShownToolsPassTheGrammarCaps: under tool_choice auto a tool's schema is only shown to the
// model, so the grammar engine's caps (size, properties per object) do not refuse it; a forced
// call, which builds a grammar from it, still gets the cap's 400.
func TestShownToolsPassTheGrammarCaps(t *testing.T) {
	var props []string
	for i := range schema.MaxProperties + 72 {
		props = append(props, fmt.Sprintf(`"p%d":{"type":"string","description":%q}`, i, strings.Repeat("d", 4<<10)))
	}
	wide := json.RawMessage(`{"type":"object","properties":{` + strings.Join(props, ",") + `}}`)
	if len(wide) <= schema.MaxBytes {
		t.Fatalf("the schema is %d bytes, not past the cap", len(wide))
	}
	req := userChat("go")
	req.Tools = []chat.Tool{{Name: "wide", Parameters: wide}}
	fake := enginetest.New(2<<20, "Hello") // a window that holds the schema (a token a byte)
	svc := New(Config{}, nil, fakeModel(t, fake))
	if _, err := svc.Chat(context.Background(), req, func(int, llm.Event) error { return nil }); err != nil {
		t.Fatalf("auto: %v", err)
	}
	if sent := fake.Requests()[0]; sent.Format != "" || !strings.Contains(sent.Prompt, `"p199"`) {
		t.Errorf("auto tools: format %q, prompt of %d bytes; want the schema shown whole, no grammar", sent.Format, len(sent.Prompt))
	}
	req.ToolChoice = ToolChoice{Mode: ToolRequired}
	_, err := svc.Chat(context.Background(), req, func(int, llm.Event) error { return nil })
	if !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), "tool wide: parameters") {
		t.Errorf("forced: %v, want the cap's 400 naming the tool", err)
	}
	// tool_choice none beside a response format: the grammar is the format's alone, the
	// tools are only shown.
	req.ToolChoice = ToolChoice{Mode: ToolNone}
	req.Generation.Format, req.Generation.Schema = llm.FormatSchema, json.RawMessage(`{"type":"object"}`)
	if _, err := svc.Chat(context.Background(), req, func(int, llm.Event) error { return nil }); err != nil {
		t.Errorf("tool_choice none with a format: %v, want served", err)
	}
	req.Generation.Format, req.Generation.Schema = "", nil
	req.ToolChoice = ToolChoice{}
	req.Tools[0].Parameters = json.RawMessage(`["not", "a", "schema"]`)
	if _, err := svc.Chat(context.Background(), req, func(int, llm.Event) error { return nil }); !errors.Is(err, llm.ErrInvalidInput) {
		t.Errorf("an array as a schema: %v, want a 400", err)
	}
}

// TestShownToolsBounded: shown schemas are held to schema.MaxShownBytes, one by one and all
// together (they go into one prompt), with a 400 before anything parses or renders them: a
// 100 MiB body of them cost gigabytes of memory before the prompt was found too long.
func TestShownToolsBounded(t *testing.T) {
	big := json.RawMessage(`{"type":"object","description":"` + strings.Repeat("d", schema.MaxShownBytes/3) + `"}`)
	req := userChat("go")
	for i := range 4 {
		req.Tools = append(req.Tools, chat.Tool{Name: fmt.Sprintf("t%d", i), Parameters: big})
	}
	fake := enginetest.New(64<<20, "Hello")
	svc := New(Config{}, nil, fakeModel(t, fake))
	_, err := svc.Chat(context.Background(), req, func(int, llm.Event) error { return nil })
	if !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), "together") {
		t.Errorf("4 tools of %d bytes: %v, want a 400", len(big), err)
	}
	req.Tools = req.Tools[:1]
	if _, err := svc.Chat(context.Background(), req, func(int, llm.Event) error { return nil }); err != nil {
		t.Errorf("1 tool of %d bytes: %v, want served", len(big), err)
	}
}
