package openai_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/servertest"
)

// Tools as the Codex CLI sends them: plain functions and a namespace of functions.
const (
	execTool  = `{"type":"function","name":"exec_command","description":"Run a command.","strict":false,"parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}}`
	agentsNS  = `{"type":"namespace","name":"multi_agent_v1","description":"Sub-agents.","tools":[{"type":"function","name":"spawn_agent","description":"Spawn one.","parameters":{"type":"object","properties":{"task":{"type":"string"}}}},{"type":"function","name":"close_agent","parameters":{"type":"object","properties":{"id":{"type":"string"}}}}]}`
	closeTool = `{"type":"function","name":"close_agent","description":"Close a file.","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}`
)

func hermesCall(name, args string) string {
	return "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": " + args + "}\n</tool_call>"
}

// respBody is a POST /v1/responses body with the tools given and extra fields.
func respBody(input string, tools []string, extra string) string {
	b := `{"model":"fake","input":` + input + `,"tools":[` + strings.Join(tools, ",") + `]`
	if extra != "" {
		b += "," + extra
	}
	return b + "}"
}

// rawStream posts body as a streamed request through the SDK (so its event types are the
// SDK's) with the headers given, and returns the events.
func rawStream(t *testing.T, s *respServer, body string, headers map[string]string) ([]responses.ResponseStreamEventUnion, error) {
	t.Helper()
	opts := []option.RequestOption{option.WithRequestBody("application/json", []byte(body))}
	for k, v := range headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	stream := s.client.Responses.NewStreaming(t.Context(), responses.ResponseNewParams{}, opts...)
	defer stream.Close()
	var evs []responses.ResponseStreamEventUnion
	for stream.Next() {
		evs = append(evs, stream.Current())
	}
	return evs, stream.Err()
}

// postResponse posts body and decodes the 200 response.
func postResponse(t *testing.T, s *respServer, body string) (responses.Response, string) {
	t.Helper()
	resp, b := s.raw(t, http.MethodPost, "/v1/responses", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var r responses.Response
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r, string(b)
}

func lastPrompt(s *respServer) string {
	reqs := s.eng.Requests()
	return reqs[len(reqs)-1].Prompt
}

// TestResponsesNamespaceTools: a namespace's functions are offered to the model by their own
// names (qualified with the namespace only when another tool has the same name); a call comes
// back as a function_call carrying its namespace, streamed or not, and a call sent back with
// its namespace renders under the name the model knows.
func TestResponsesNamespaceTools(t *testing.T) {
	plain, clash := []string{execTool, agentsNS}, []string{execTool, closeTool, agentsNS}
	cases := []struct {
		name    string
		tools   []string
		reply   string
		extra   string
		want    []string
		offered []string // tool names the prompt shows
	}{
		{"a namespaced call", plain, hermesCall("spawn_agent", `{"task": "tests"}`), "",
			[]string{`function_call/completed: spawn_agent@multi_agent_v1 {"task":"tests"}`}, []string{"exec_command", "spawn_agent", "close_agent"}},
		{"a top-level call beside a namespace", plain, hermesCall("exec_command", `{"cmd": "ls"}`), "",
			[]string{`function_call/completed: exec_command {"cmd":"ls"}`}, []string{"exec_command", "spawn_agent"}},
		{"a clash: the namespaced one is qualified", clash, hermesCall("multi_agent_v1__close_agent", `{"id": "a1"}`), "",
			[]string{`function_call/completed: close_agent@multi_agent_v1 {"id":"a1"}`}, []string{"close_agent", "multi_agent_v1__close_agent", "spawn_agent"}},
		{"a clash: the top-level one keeps its name", clash, hermesCall("close_agent", `{"path": "x"}`), "",
			[]string{`function_call/completed: close_agent {"path":"x"}`}, []string{"close_agent", "multi_agent_v1__close_agent"}},
		{"tool_choice forces a namespaced function by its inner name", plain, `{"name": "spawn_agent", "arguments": {"task": "t"}}`,
			`"tool_choice":{"type":"function","name":"spawn_agent"}`, []string{`function_call/completed: spawn_agent@multi_agent_v1 {"task":"t"}`}, nil},
		{"tool_choice with a namespace picks it out of a clash", clash, `{"name": "multi_agent_v1__close_agent", "arguments": {"id": "b"}}`,
			`"tool_choice":{"type":"function","name":"close_agent","namespace":"multi_agent_v1"}`, []string{`function_call/completed: close_agent@multi_agent_v1 {"id":"b"}`}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := startResponsesWith(t, filepath.Join(t.TempDir(), "db.sqlite"), respConfig{template: servertest.ToolTemplate, reply: tc.reply})
			body := respBody(`"go"`, tc.tools, tc.extra)
			r, raw := postResponse(t, s, body)
			if got := outputViews(&r); !slices.Equal(got, tc.want) {
				t.Errorf("output %q, want %q", got, tc.want)
			}
			for _, name := range tc.offered {
				if !strings.Contains(lastPrompt(s), `"name": "`+name+`"`) {
					t.Errorf("the prompt does not offer %s:\n%s", name, lastPrompt(s))
				}
			}
			if strings.Contains(tc.want[0], "@") != strings.Contains(raw, `"namespace":"multi_agent_v1"`) {
				t.Errorf("namespace on the wire: %s", raw)
			}
			var echo struct{ Tools []json.RawMessage }
			_ = json.Unmarshal([]byte(raw), &echo)
			if len(echo.Tools) != len(tc.tools) || !strings.Contains(string(echo.Tools[len(echo.Tools)-1]), `"type":"namespace"`) {
				t.Errorf("tools echo %s", echo.Tools)
			}
			if tc.extra != "" {
				if req := s.eng.Requests()[0]; req.Format != llm.FormatSchema || !strings.Contains(string(req.Schema), strings.TrimSuffix(strings.SplitN(tc.reply, `"`, 5)[3], `"`)) {
					t.Errorf("forced call: format %q schema %s", req.Format, req.Schema)
				}
			}
			evs, err := rawStream(t, s, strings.TrimSuffix(body, "}")+`,"stream":true}`, nil)
			if err != nil {
				t.Fatal(err)
			}
			final := checkStream(t, evs)
			if got := outputViews(&final); !slices.Equal(got, tc.want) {
				t.Errorf("streamed output %q, want %q", got, tc.want)
			}
			if c := evs[2].Item.AsFunctionCall(); evs[2].Type != "response.output_item.added" || strings.Contains(tc.want[0], "@") != (c.Namespace == "multi_agent_v1") {
				t.Errorf("output_item.added %s", evs[2].RawJSON())
			}
		})
	}
}

// TestResponsesNamespaceRoundTrip: function_call items sent back with their namespace (as a
// client that keeps no state does, store false) render as the calls the model made.
func TestResponsesNamespaceRoundTrip(t *testing.T) {
	s := startResponsesWith(t, filepath.Join(t.TempDir(), "db.sqlite"), respConfig{template: servertest.ToolTemplate, reply: "Done."})
	input := func(name, ns string) string {
		call := `{"type":"function_call","call_id":"c1","name":"` + name + `","arguments":"{\"id\":\"a1\"}"`
		if ns != "" {
			call += `,"namespace":"` + ns + `"`
		}
		return `[{"role":"user","content":"go"},` + call + `},{"type":"function_call_output","call_id":"c1","output":"closed"}]`
	}
	for _, tc := range []struct {
		name     string
		tools    []string
		callName string
		ns       string
		want     string
	}{
		{"namespaced", []string{execTool, agentsNS}, "close_agent", "multi_agent_v1", "close_agent"},
		{"namespaced in a clash", []string{execTool, closeTool, agentsNS}, "close_agent", "multi_agent_v1", "multi_agent_v1__close_agent"},
		{"top-level in a clash", []string{execTool, closeTool, agentsNS}, "close_agent", "", "close_agent"},
		{"a namespace no longer offered", []string{execTool}, "close_agent", "multi_agent_v1", "close_agent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := postResponse(t, s, respBody(input(tc.callName, tc.ns), tc.tools, `"store":false`))
			if r.OutputText() != "Done." {
				t.Errorf("output %q", outputViews(&r))
			}
			want := hermesCall(tc.want, `{"id": "a1"}`) + "<|im_end|>\n<|im_start|>user\n<tool_response>\nclosed\n</tool_response>"
			if !strings.Contains(lastPrompt(s), want) {
				t.Errorf("prompt lacks %q:\n%s", want, lastPrompt(s))
			}
		})
	}
}

// TestResponsesBuiltinToolsDropped: built-in tools (and types this server does not know) are
// left out with a warning each, never refused; the model is not told of them.
func TestResponsesBuiltinToolsDropped(t *testing.T) {
	s := startResponsesWith(t, filepath.Join(t.TempDir(), "db.sqlite"), respConfig{template: servertest.ToolTemplate})
	builtins := []string{"web_search", "web_search_preview", "file_search", "code_interpreter", "computer_use_preview",
		"image_generation", "mcp", "local_shell", "shell", "apply_patch", "tool_search", "some_future_tool"}
	tools := []string{execTool}
	for _, b := range builtins {
		tools = append(tools, `{"type":"`+b+`","external_web_access":false}`)
	}
	r, raw := postResponse(t, s, respBody(`"hi"`, tools, ""))
	if r.OutputText() != respReply {
		t.Errorf("output %q", outputViews(&r))
	}
	ws := warnings(t, raw)
	if len(ws) != len(builtins) {
		t.Fatalf("warnings %q, want one per dropped tool", ws)
	}
	for i, b := range builtins {
		if !strings.Contains(ws[i], b) || !strings.Contains(ws[i], "not offered to the model") {
			t.Errorf("warning %d %q, want one about %s", i, ws[i], b)
		}
	}
	if p := lastPrompt(s); !strings.Contains(p, "exec_command") || strings.Contains(p, "web_search") {
		t.Errorf("prompt:\n%s", p)
	}
	if len(r.Tools) != 1 || r.Tools[0].Name != "exec_command" {
		t.Errorf("tools echo %+v, want the served function only", r.Tools)
	}
}

// TestResponsesCustomTools: a custom tool is offered as a function of one string; its call is
// a custom_tool_call item with that string as input, streamed or not, and a custom_tool_call
// with its output sent back renders as the call and its result.
func TestResponsesCustomTools(t *testing.T) {
	patch := "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch"
	quoted, _ := json.Marshal(patch)
	custom := `{"type":"custom","name":"apply_patch","description":"Edit files.","format":{"type":"grammar","syntax":"lark","definition":"start: begin_patch hunk+ end_patch"}}`
	plain := `{"type":"custom","name":"note","description":"Take a note."}`
	for _, tc := range []struct {
		name, tool, reply, want, warning string
	}{
		{"grammar format", custom, hermesCall("apply_patch", `{"input": `+string(quoted)+`}`), "custom_tool_call: apply_patch " + string(quoted), "lark grammar"},
		{"text format, another argument name", plain, hermesCall("note", `{"text": "remember"}`), `custom_tool_call: note "remember"`, ""},
		{"in a namespace", `{"type":"namespace","name":"notes","description":"Notes.","tools":[` + plain + `]}`,
			hermesCall("note", `{"input": "x"}`), `custom_tool_call: note@notes "x"`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startResponsesWith(t, filepath.Join(t.TempDir(), "db.sqlite"), respConfig{template: servertest.ToolTemplate, reply: tc.reply})
			body := respBody(`"go"`, []string{tc.tool}, "")
			r, raw := postResponse(t, s, body)
			if got := outputViews(&r); len(got) != 1 || got[0] != tc.want {
				t.Errorf("output %q, want %q", got, tc.want)
			}
			ws := warnings(t, raw)
			if tc.warning == "" && ws != nil || tc.warning != "" && (len(ws) != 1 || !strings.Contains(ws[0], tc.warning)) {
				t.Errorf("warnings %q, want %q", ws, tc.warning)
			}
			if p := lastPrompt(s); !strings.Contains(p, `"input": {"description": "The tool's input, as free-form text`) {
				t.Errorf("the prompt does not offer one string input:\n%s", p)
			}
			c := r.Output[0].AsCustomToolCall()
			if !strings.HasPrefix(c.ID, "ctc_") || !strings.HasPrefix(c.CallID, "call_") {
				t.Errorf("custom_tool_call ids %q %q", c.ID, c.CallID)
			}
			evs, err := rawStream(t, s, strings.TrimSuffix(body, "}")+`,"stream":true}`, nil)
			if err != nil {
				t.Fatal(err)
			}
			final := checkStream(t, evs)
			if got := outputViews(&final); len(got) != 1 || got[0] != tc.want {
				t.Errorf("streamed output %q, want %q", got, tc.want)
			}

			// The next turn, sent whole.
			item, _ := json.Marshal(c)
			next := `[{"role":"user","content":"go"},` + string(item) + `,{"type":"custom_tool_call_output","call_id":"` + c.CallID + `","output":"applied"}]`
			postResponse(t, s, respBody(next, []string{tc.tool}, `"store":false`))
			input, _ := json.Marshal(c.Input)
			want := "<|im_start|>assistant\n\n" + hermesCall(c.Name, `{"input": `+string(input)+`}`) + "<|im_end|>\n<|im_start|>user\n<tool_response>\napplied\n</tool_response>"
			if !strings.Contains(lastPrompt(s), want) {
				t.Errorf("next prompt lacks %q:\n%s", want, lastPrompt(s))
			}
		})
	}
}

// TestChatDeveloperAndStore: chat completions take a developer message as a system turn and
// accept the Responses-era fields agents send there too (store, metadata, prompt_cache_key,
// safety_identifier, service_tier), with nothing kept.
func TestChatDeveloperAndStore(t *testing.T) {
	f := setup(t, config{template: chatML})
	body := `{"model":"fake","messages":[{"role":"developer","content":"Be terse."},{"role":"user","content":"hi"}],` +
		`"store":true,"metadata":{"k":"v"},"prompt_cache_key":"s1","safety_identifier":"u","service_tier":"auto","verbosity":"low"}`
	resp, b := f.do(t, http.MethodPost, "/v1/chat/completions", body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), defaultReply) {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	reqs := f.eng.Requests()
	if p := reqs[len(reqs)-1].Prompt; !strings.HasPrefix(p, "<|im_start|>system\nBe terse.<|im_end|>\n<|im_start|>user\nhi") {
		t.Errorf("prompt %q", p)
	}
}

// TestResponsesCustomToolChain: a custom call forced by tool_choice, stored, then answered
// with a custom_tool_call_output through previous_response_id.
func TestResponsesCustomToolChain(t *testing.T) {
	tool := `{"type":"custom","name":"apply_patch","description":"Edit files."}`
	s := startResponsesWith(t, filepath.Join(t.TempDir(), "db.sqlite"), respConfig{template: servertest.ToolTemplate,
		reply: `{"name": "apply_patch", "arguments": {"input": "*** Begin Patch"}}`})
	r, _ := postResponse(t, s, respBody(`"go"`, []string{tool}, `"tool_choice":{"type":"custom","name":"apply_patch"}`))
	if got := outputViews(&r); !slices.Equal(got, []string{`custom_tool_call: apply_patch "*** Begin Patch"`}) {
		t.Fatalf("output %q", got)
	}
	if req := s.eng.Requests()[0]; req.Format != llm.FormatSchema || !strings.Contains(string(req.Schema), "apply_patch") {
		t.Errorf("forced custom call: format %q schema %s", req.Format, req.Schema)
	}
	c := r.Output[0].AsCustomToolCall()
	next := `[{"type":"custom_tool_call_output","call_id":"` + c.CallID + `","output":"patched"}]`
	postResponse(t, s, respBody(next, []string{tool}, `"previous_response_id":"`+r.ID+`"`))
	want := hermesCall("apply_patch", `{"input": "*** Begin Patch"}`) + "<|im_end|>\n<|im_start|>user\n<tool_response>\npatched\n</tool_response>"
	if !strings.Contains(lastPrompt(s), want) {
		t.Errorf("prompt lacks %q:\n%s", want, lastPrompt(s))
	}
}

// TestResponsesAllowedTools: tool_choice allowed_tools offers the model only the tools it
// lists (by name, namespaced or not); mode required forces a call among them.
func TestResponsesAllowedTools(t *testing.T) {
	s := startResponsesWith(t, filepath.Join(t.TempDir(), "db.sqlite"), respConfig{template: servertest.ToolTemplate, reply: hermesCall("spawn_agent", `{"task":"x"}`)})
	choice := `"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"spawn_agent","namespace":"multi_agent_v1"},{"type":"web_search"}]}`
	r, _ := postResponse(t, s, respBody(`"go"`, []string{execTool, agentsNS, `{"type":"web_search"}`}, choice))
	p := lastPrompt(s)
	if !strings.Contains(p, "spawn_agent") || strings.Contains(p, "exec_command") || strings.Contains(p, "close_agent") {
		t.Errorf("the prompt offers other tools than spawn_agent:\n%s", p)
	}
	if g := s.eng.Requests()[len(s.eng.Requests())-1]; g.Format == "" {
		t.Errorf("mode required built no grammar")
	}
	if len(r.Output) == 0 || r.Output[len(r.Output)-1].Type != "function_call" || r.Output[len(r.Output)-1].AsFunctionCall().Name != "spawn_agent" {
		t.Errorf("output %s", r.RawJSON())
	}
	postResponse(t, s, respBody(`"go"`, []string{execTool, agentsNS}, `"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"exec_command"}]}`))
	if p := lastPrompt(s); !strings.Contains(p, "exec_command") || strings.Contains(p, "spawn_agent") {
		t.Errorf("mode auto: the prompt offers other tools than exec_command:\n%s", p)
	}
}
