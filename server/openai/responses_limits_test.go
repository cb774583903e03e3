package openai_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// bigSchema is a function tool whose parameters schema is about n bytes long.
func bigSchema(n int) string {
	var sb strings.Builder
	sb.WriteString(`{"type":"function","name":"big","parameters":{"type":"object","properties":{`)
	desc := strings.Repeat("d", 200)
	for i := 0; sb.Len() < n; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"p%d":{"type":"string","description":"%s"}`, i, desc)
	}
	sb.WriteString(`}}}`)
	return sb.String()
}

// TestResponsesToolLimits: tools at and past OpenAI's limits get a 400 in OpenAI's shape naming
// the entry at fault (never a 500); a schema of 1 MB is served when the window holds it.
func TestResponsesToolLimits(t *testing.T) {
	small := newResponsesServer(t)
	fn := func(name string) string {
		return `{"type":"function","name":"` + name + `","parameters":{"type":"object"}}`
	}
	many := make([]string, 500)
	for i := range many {
		many[i] = fn(fmt.Sprintf("f%d", i))
	}
	long := strings.Repeat("a", 200)
	ns := func(name string, tools ...string) string {
		return `{"type":"namespace","name":"` + name + `","description":"d","tools":[` + strings.Join(tools, ",") + `]}`
	}
	const bad = http.StatusBadRequest
	for _, tc := range []struct {
		name             string
		tools            []string
		extra            string
		status           int
		param, code, msg string
	}{
		{"500 tools", many, "", bad, "tools", "array_above_max_length", "maximum length 128, but got an array with length 500"},
		{"a name of 200 characters", []string{fn(long)}, "", bad, "tools[0].name", "string_above_max_length", "maximum length 64, but got a string with length 200"},
		{"a name with spaces", []string{fn("get weather")}, "", bad, "tools[0].name", "", "^[a-zA-Z0-9_-]+$"},
		{"a namespace name with spaces", []string{ns("my tools", fn("f"))}, "", bad, "tools[0].name", "", "letters, digits"},
		{"an inner name of 200 characters", []string{ns("n", fn(long))}, "", bad, "tools[0].tools[0].name", "string_above_max_length", "length 200"},
		{"an inner tool without a name", []string{ns("n", `{"type":"function"}`)}, "", bad, "tools[0].tools[0].name", "", "no name"},
		{"a custom tool without a name", []string{`{"type":"custom"}`}, "", bad, "tools[0].name", "", "no name"},
		{"two top-level tools of one name", []string{fn("f"), fn("f")}, "", bad, "tools[1].name", "", "like tools[0]"},
		{"two tools of one name in a namespace", []string{ns("n", fn("f"), fn("f"))}, "", bad, "tools[0].tools[1].name", "", "unique"},
		{"a clash whose qualified name is too long", []string{fn("f"), ns(strings.Repeat("n", 63), fn("f"))}, "", bad, "tools[1].tools[0].name", "", "longer than 64"},
		{"tool_choice forcing a dropped built-in", []string{`{"type":"web_search"}`}, `"tool_choice":{"type":"web_search"}`, bad, "tool_choice", "unsupported_parameter", "does not run"},
		{"tool_choice forcing a preview built-in", []string{fn("f")}, `"tool_choice":{"type":"web_search_preview"}`, bad, "tool_choice", "unsupported_parameter", "does not run"},
		{"tool_choice required with only built-ins", []string{`{"type":"web_search"}`}, `"tool_choice":"required"`, bad, "tool_choice", "", "built-in tools this server does not run"},
		{"tool_choice naming an inner name two namespaces share", []string{ns("a", fn("f")), ns("b", fn("f"))}, `"tool_choice":{"type":"function","name":"f"}`, bad, "tool_choice", "", "not in tools"},
		{"tool_choice custom naming a function", []string{fn("f")}, `"tool_choice":{"type":"custom","name":"f"}`, bad, "tool_choice", "", "custom \"f\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := small.raw(t, http.MethodPost, "/v1/responses", respBody(`"hi"`, tc.tools, tc.extra))
			checkRespError(t, resp, b, tc.status, "invalid_request_error", tc.param, tc.code, tc.msg)
		})
	}

	// A namespace without tools offers nothing: dropped with a warning.
	r, raw := postResponse(t, small, respBody(`"hi"`, []string{fn("f"), ns("empty")}, ""))
	if ws := warnings(t, raw); len(ws) != 1 || !strings.Contains(ws[0], "namespace empty with no tools") || len(r.Tools) != 1 {
		t.Errorf("warnings %q tools %+v", ws, r.Tools)
	}

	// A 1 MB schema: runtime/schema caps a schema's size (a 400 that says so), or, within the
	// cap, the prompt outgrows a small window (context_length_exceeded); never a 500. With a
	// window that holds it, it is served unless the size cap refuses it.
	big := startResponses(t, filepath.Join(t.TempDir(), "db.sqlite"), 1<<21, nil)
	for _, s := range []*respServer{small, big} {
		resp, b := s.raw(t, http.MethodPost, "/v1/responses", respBody(`"hi"`, []string{bigSchema(1 << 20)}, ""))
		if resp.StatusCode == http.StatusOK && s == big {
			continue
		}
		if e := parseError(t, b); resp.StatusCode != bad || e.Type != "invalid_request_error" ||
			!strings.Contains(e.Message, "bytes") && !strings.Contains(e.Message, "context window") {
			t.Errorf("a 1 MB schema: %d %.300s", resp.StatusCode, b)
		}
	}
}

// TestResponsesCallOutputsUnanswered: an output for a call id that was never made is a 400,
// for function and custom tools alike; custom_tool_call items need their input.
func TestResponsesCallOutputsUnanswered(t *testing.T) {
	s := newResponsesServer(t)
	for _, tc := range []struct{ name, input, param, msg string }{
		{"function_call_output", `[{"type":"function_call_output","call_id":"nope","output":"x"}]`, "input[0].call_id", "No tool call found for function call output with call_id nope"},
		{"custom_tool_call_output", `[{"role":"user","content":"hi"},{"type":"custom_tool_call_output","call_id":"nope","output":"x"}]`, "input[1].call_id", "No tool call found for custom tool call output with call_id nope"},
		{"custom output answering a function call id of another", `[{"type":"custom_tool_call","call_id":"c1","name":"n","input":"i"},{"type":"custom_tool_call_output","call_id":"c2","output":"x"}]`, "input[1].call_id", "call_id c2"},
		{"custom_tool_call without input", `[{"type":"custom_tool_call","call_id":"c1","name":"n"}]`, "input[0].input", "without input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := s.raw(t, http.MethodPost, "/v1/responses", `{"model":"fake","store":false,"input":`+tc.input+`}`)
			checkRespError(t, resp, b, http.StatusBadRequest, "invalid_request_error", tc.param, "", tc.msg)
		})
	}
}
