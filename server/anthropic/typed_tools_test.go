package anthropic_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/server/servertest"
)

// withTools is a request with the given tools array and a roomy max_tokens.
func withTools(tools string, extra ...string) string {
	return body(strings.Join(append([]string{`"max_tokens":400,"tools":` + tools}, extra...), ","))
}

const customWeather = `{"name":"get_weather","description":"The weather in a city","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}`

// TestServerTools: typed tools without an input_schema are dropped with a warning (in the
// reply and in the stream's message_delta); a typed tool with one is offered as a function
// tool; Claude Code's extra tool fields and cache_control are accepted.
func TestServerTools(t *testing.T) {
	f := setup(t, config{template: hermesTemplate})
	tools := `[{"type":"web_search_20250305","name":"web_search","max_uses":5},{"type":"bash_20250124","name":"bash"},` +
		`{"type":"mcp_toolset","mcp_server_name":"files"},` +
		`{"type":"text_editor_20250728","name":"str_replace_based_edit_tool","input_schema":{"type":"object","properties":{"path":{"type":"string"}}}},` +
		customWeather + `,"cache_control":{"type":"ephemeral"},"defer_loading":false,"eager_input_streaming":true,"strict":true,"input_examples":[{"city":"Oslo"}]}]`
	r := f.ok(t, withTools(tools))
	p := f.lastPrompt(t)
	for _, name := range []string{`"get_weather"`, `"str_replace_based_edit_tool"`} {
		if !strings.Contains(p, name) {
			t.Errorf("prompt lacks %s: %q", name, p)
		}
	}
	for _, name := range []string{"web_search", `"bash"`, "files"} {
		if strings.Contains(p, name) {
			t.Errorf("prompt has the dropped %s: %q", name, p)
		}
	}
	want := []string{`tools.0: "web_search_20250305" is a server tool`, `tools.1: "bash_20250124" is a server tool`, `tools.2: "mcp_toolset" is a server tool`}
	if r.Superfluid == nil || len(r.Superfluid.Warnings) != 3 {
		t.Fatalf("warnings %v, want %d", r.Superfluid, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(r.Superfluid.Warnings[i], w) {
			t.Errorf("warning %d %q, want %q", i, r.Superfluid.Warnings[i], w)
		}
	}

	resp, b := f.do(t, http.MethodPost, "/v1/messages", withTools(tools, `"stream":true`))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	evs := parseSSE(t, b)
	checkBlocks(t, evs)
	if md := evs[len(evs)-2].data; !strings.Contains(md, `"superfluid":{"warnings":["tools.0: \"web_search_20250305\" is a server tool`) {
		t.Errorf("message_delta %s", md)
	}

	// mcp_servers are not connected to, and server tool blocks of an earlier turn (run by
	// another server) are dropped: each a warning.
	r = f.ok(t, `{"model":"fake","max_tokens":10,"mcp_servers":[{"type":"url","url":"https://example.com/sse","name":"ex"}],"messages":[`+
		`{"role":"user","content":"Search."},{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"q"}},`+
		`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]},{"type":"text","text":"Found it."}]},{"role":"user","content":"Thanks."}]}`)
	if w := warningsOf(r); w != "mcp_servers: this server connects to no MCP servers; the tools of 1 were not offered to the model; "+
		"messages.1.content.0: the server_tool_use block was dropped: this server runs no server tools; "+
		"messages.1.content.1: the web_search_tool_result block was dropped: this server runs no server tools" {
		t.Errorf("warnings %q", w)
	}
	if p := f.lastPrompt(t); !strings.Contains(p, "<|im_start|>assistant\nFound it.<|im_end|>") || strings.Contains(p, "srvtoolu") {
		t.Errorf("prompt %q", p)
	}

	// A tool_choice naming a dropped tool names the tools there are.
	resp, b = f.do(t, http.MethodPost, "/v1/messages", withTools(tools, `"tool_choice":{"type":"tool","name":"web_search"}`))
	checkError(t, resp, b, wantError{400, invalidReq, `tool_choice.name: "web_search" is not one of the tools given (str_replace_based_edit_tool, get_weather)`})
}

// TestDeferredTools: a defer_loading tool stays out of the prompt until a tool_reference in a
// tool result loads it; with the request's server tool search dropped, deferred tools are
// offered from the start (nothing here would ever load them).
func TestDeferredTools(t *testing.T) {
	const search = `{"name":"ToolSearch","input_schema":{"type":"object","properties":{"query":{"type":"string"}}}}`
	deferred := customWeather + `,"defer_loading":true}`
	f := setup(t, config{template: hermesTemplate})

	f.ok(t, withTools(`[`+search+`,`+deferred+`]`))
	if p := f.lastPrompt(t); strings.Contains(p, "get_weather") || !strings.Contains(p, "ToolSearch") {
		t.Errorf("before the search: prompt %q", p)
	}

	loaded := `{"model":"fake","max_tokens":10,"tools":[` + search + `,` + deferred + `],"messages":[{"role":"user","content":"Weather?"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"ToolSearch","input":{"query":"weather"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"tool_reference","tool_name":"get_weather"}]}]}]}`
	f.ok(t, loaded)
	if p := f.lastPrompt(t); !strings.Contains(p, `"get_weather"`) || !strings.Contains(p, "Tool loaded: get_weather") {
		t.Errorf("after the search: prompt %q", p)
	}

	f.ok(t, withTools(`[{"type":"tool_search_tool_regex_20251119","name":"tool_search_tool_regex"},`+deferred+`]`))
	if p := f.lastPrompt(t); !strings.Contains(p, `"get_weather"`) {
		t.Errorf("server tool search dropped: prompt %q", p)
	}

	resp, b := f.do(t, http.MethodPost, "/v1/messages", strings.Replace(loaded, `"tool_name":"get_weather"`, `"name":"get_weather"`, 1))
	checkError(t, resp, b, wantError{400, invalidReq, "messages.2.content.0.content.0.tool_name: Field required"})
}

// TestToolResultEdges: a result for a call the previous assistant turn did not make is refused
// with Anthropic's own message; images in a result are dropped with a warning and its text
// kept; is_error marks the result.
func TestToolResultEdges(t *testing.T) {
	call := func(id string) string {
		return `{"role":"assistant","content":[{"type":"tool_use","id":"` + id + `","name":"get_weather","input":{"city":"Oslo"}}]}`
	}
	result := func(id, content string) string {
		return `{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":` + content + `}]}`
	}
	const image = `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}`
	const user = `{"role":"user","content":"Weather?"}`
	f := setup(t, config{template: hermesTemplate})
	for _, tt := range []struct{ name, msgs, msg string }{
		{"never made", `[` + user + `,` + call("toolu_1") + `,` + result("toolu_99", `"?"`) + `]`,
			"messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_99. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."},
		{"no call at all", `[` + result("toolu_1", `"?"`) + `]`, "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_1."},
		{"a call two turns back", `[` + user + `,` + call("toolu_1") + `,` + result("toolu_1", `"sunny"`) + `,` + call("toolu_2") + `,` + result("toolu_1", `"again"`) + `]`,
			"messages.4.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_1."},
	} {
		resp, b := f.do(t, http.MethodPost, "/v1/messages", msgs(tt.msgs))
		checkError(t, resp, b, wantError{400, invalidReq, tt.msg})
	}
	if n := len(f.eng.Requests()); n != 0 {
		t.Errorf("refused results reached the engine %d times", n)
	}

	// Two assistant messages in a row are one turn: results may answer the calls of both.
	f.ok(t, msgs(`[`+user+`,`+call("toolu_1")+`,`+call("toolu_2")+`,{"role":"user","content":[`+
		`{"type":"tool_result","tool_use_id":"toolu_1","content":"a"},{"type":"tool_result","tool_use_id":"toolu_2","content":"b"}]}]`))

	// cache_control on the tool_use, the tool_result and the image is accepted and ignored.
	cached := strings.Replace(call("toolu_1"), `"input":{"city":"Oslo"}`, `"input":{"city":"Oslo"},"cache_control":{"type":"ephemeral"}`, 1)
	r := f.ok(t, msgs(`[`+user+`,`+cached+`,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"cache_control":{"type":"ephemeral"},`+
		`"content":[{"type":"text","text":"see the chart"},`+strings.TrimSuffix(image, "}")+`,"cache_control":{"type":"ephemeral"}}]}]}]`))
	if p := f.lastPrompt(t); !strings.Contains(p, "<tool_response name=\"get_weather\" id=\"toolu_1\">\nError: see the chart\n</tool_response>") || strings.Contains(p, "iVBOR") {
		t.Errorf("prompt %q", p)
	}
	if w := warningsOf(r); w != "messages.2.content.0.content.1: the image block was dropped: this server does not take images inside tool results; send it in a user message" {
		t.Errorf("warnings %q", w)
	}
}

// TestToolBadInput: the bad tools of issue 17 get Anthropic's 400 or are served, never a 500.
func TestToolBadInput(t *testing.T) {
	f := setup(t, config{ctx: 1 << 20, template: hermesTemplate})
	long := strings.Repeat("a", 200)
	resp, b := f.do(t, http.MethodPost, "/v1/messages", withTools(`[{"name":"`+long+`","input_schema":{"type":"object"}}]`))
	checkError(t, resp, b, wantError{400, invalidReq, "tools.0.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$', got \"" + long[:80] + "...\" (200 characters); rename the tool"})
	resp, b = f.do(t, http.MethodPost, "/v1/messages", withTools(`[`+customWeather+`},{"name":"get weather","input_schema":{"type":"object"}}]`))
	checkError(t, resp, b, wantError{400, invalidReq, `tools.1.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$', got "get weather" (11 characters)`})
	if n := len(f.eng.Requests()); n != 0 {
		t.Errorf("refused tools reached the engine %d times", n)
	}

	// 500 tools: all offered.
	var many []string
	for i := range 500 {
		many = append(many, fmt.Sprintf(`{"name":"tool_%d","input_schema":{"type":"object","properties":{"x":{"type":"integer"}}}}`, i))
	}
	f.ok(t, withTools("["+strings.Join(many, ",")+"]"))
	if p := f.lastPrompt(t); strings.Count(p, `"name": "tool_`) != 500 {
		t.Errorf("%d of 500 tools in the prompt", strings.Count(p, `"name": "tool_`))
	}

	// A 1 MB input_schema under tool_choice auto is only shown to the model: served whole in a
	// window that holds it (the grammar engine's size caps apply to forced calls only).
	var props strings.Builder
	for i := 0; props.Len() < 1<<20; i++ {
		fmt.Fprintf(&props, `"p%d":{"type":"string","description":"field %d of a very wide schema"},`, i, i)
	}
	big := `[{"name":"wide","input_schema":{"type":"object","properties":{` + strings.TrimSuffix(props.String(), ",") + `}}}]`
	wide := setup(t, config{ctx: 2 << 20, template: hermesTemplate})
	wide.ok(t, withTools(big))
	if p := wide.lastPrompt(t); len(p) < 1<<20 {
		t.Errorf("prompt of %d bytes, want the 1 MB schema in it", len(p))
	}
}

// TestMaxTokensBeyondWindow: max_tokens past what the window leaves is capped there, not
// refused (the spec's "fill the context"): the reply stops at the window with max_tokens.
func TestMaxTokensBeyondWindow(t *testing.T) {
	f := setup(t, config{ctx: 2048, reply: strings.Repeat("word ", 1000)})
	for _, stream := range []bool{false, true} {
		resp, b := f.do(t, http.MethodPost, "/v1/messages", body(fmt.Sprintf(`"max_tokens":128000,"stream":%v`, stream)))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %v: status %d: %s", stream, resp.StatusCode, b)
		}
		prompt := len(rendered("", userHello)) + 1 // the fake counts bytes, and BOS
		want := fmt.Sprintf(`"stop_reason":"max_tokens","stop_sequence":null`)
		wantOut := fmt.Sprintf(`"output_tokens":%d`, 2048-prompt)
		if !strings.Contains(string(b), want) || !strings.Contains(string(b), wantOut) {
			t.Errorf("stream %v: want %s and %s in %s", stream, want, wantOut, b[max(0, len(b)-400):])
		}
		note := fmt.Sprintf("the reply filled the model's context window (2048 tokens: %d of prompt, %d generated) before max_tokens 128000", prompt, 2048-prompt)
		if !strings.Contains(string(b), note) {
			t.Errorf("stream %v: no note %q in %s", stream, note, b[max(0, len(b)-600):])
		}
	}
	// Cut by max_tokens itself: no note.
	if r := f.ok(t, body(`"max_tokens":5`)); r.StopReason != "max_tokens" || r.Superfluid != nil {
		t.Errorf("cut at max_tokens: %+v", r)
	}
	if req := f.eng.Requests()[0]; req.MaxTokens != 128000 {
		t.Errorf("engine max_tokens %d", req.MaxTokens)
	}
}

// TestToolChoiceSingleCall: disable_parallel_tool_use on any and tool forces one call (the
// grammar is a single call object, not an array of calls).
func TestToolChoiceSingleCall(t *testing.T) {
	f := setup(t, config{template: hermesTemplate, reply: weatherJSON})
	for _, tt := range []struct {
		choice string
		array  bool
	}{
		{`{"type":"any"}`, true},
		{`{"type":"any","disable_parallel_tool_use":true}`, false},
		{`{"type":"tool","name":"get_weather"}`, true},
		{`{"type":"tool","name":"get_weather","disable_parallel_tool_use":true}`, false},
	} {
		r := f.ok(t, body(weatherTools+`,"tool_choice":`+tt.choice))
		reqs := f.eng.Requests()
		var schema struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(reqs[len(reqs)-1].Schema, &schema)
		if (schema.Type == "array") != tt.array || r.StopReason != "tool_use" {
			t.Errorf("%s: grammar type %q, stop %q", tt.choice, schema.Type, r.StopReason)
		}
	}
}

// TestBetaHeadersAndQuery: any anthropic-beta list and ?beta=true are accepted, on both routes.
func TestBetaHeadersAndQuery(t *testing.T) {
	f := setup(t, config{})
	for _, beta := range []string{"", "claude-code-20250219,interleaved-thinking-2025-05-14", "made-up-beta-2099-12-31, another one", "!!"} {
		for _, path := range []string{"/v1/messages?beta=true", "/v1/messages/count_tokens?beta=true"} {
			resp, b := servertest.Do(t, http.MethodPost, f.srv.URL+path, body(""), "anthropic-beta", beta, "anthropic-version", "2023-06-01")
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s, beta %q: status %d %s", path, beta, resp.StatusCode, b)
			}
		}
	}
}
