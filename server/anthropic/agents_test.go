package anthropic_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/server/servertest"
)

// claudeCode are the first requests of Claude Code 2.1.332 (`claude -p "Say hi"`), captured
// unmodified with their headers: the full tool set, and a smaller one with a deferred tool.
var claudeCode = []string{"claude-code-2.1.332-first", "claude-code-2.1.332-first-small"}

// agentRequest reads a captured request: its body, aimed at the fake model, and its headers
// as name, value pairs.
func agentRequest(t *testing.T, name string) (string, []string) {
	body, headers := servertest.AgentRequest(t, "testdata/agents/"+name+".json", "fake")
	// Kept whole: the Workflow tool's maxLength 524288 is past the grammar's repeat limit and
	// must be served (shown to the model), not refused.
	if !strings.Contains(body, `"maxLength": 524288`) {
		t.Fatal("the fixture lost its maxLength 524288")
	}
	return body, headers
}

// TestClaudeCodeFirstRequest replays Claude Code's first requests (system reminder inside
// messages with cache_control, adaptive thinking with display omitted, output_config.effort,
// context_management, metadata.user_id, max_tokens 32000, anthropic-beta headers,
// ?beta=true) through the real router, with a template that renders tools natively and one
// that gets them through the polyfill: a 200 stream of well-formed events, the thinking
// block without its text, the reminder as a system turn after the user's, and no warnings.
func TestClaudeCodeFirstRequest(t *testing.T) {
	templates := []struct{ name, src string }{{"chatml", ""}, {"hermes", hermesTemplate}}
	for _, name := range claudeCode {
		for _, tmpl := range templates {
			t.Run(name+"/"+tmpl.name, func(t *testing.T) {
				body, headers := agentRequest(t, name)
				f := setup(t, config{ctx: 256 << 10, template: tmpl.src, reply: thinkingReply})
				resp, b := servertest.Do(t, http.MethodPost, f.srv.URL+"/v1/messages?beta=true", body, headers...)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d: %s", resp.StatusCode, b)
				}
				if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
					t.Errorf("Content-Type %q", ct)
				}
				evs := parseSSE(t, b)
				blocks := checkBlocks(t, evs)
				if len(blocks) != 2 || str(blocks[0].start["type"]) != "thinking" || str(blocks[1].start["type"]) != "text" {
					t.Fatalf("blocks %+v", blocks)
				}
				// display omitted: the thinking block is there, with its signature and no text.
				if ds := blocks[0].deltas; len(ds) != 1 || str(ds[0]["type"]) != "signature_delta" || str(ds[0]["signature"]) == "" {
					t.Errorf("thinking deltas %v; want one signature_delta", ds)
				}
				var text strings.Builder
				for _, d := range blocks[1].deltas {
					text.WriteString(str(d["text"]))
				}
				if text.String() != "Hello!" {
					t.Errorf("text %q", text.String())
				}
				last := evs[len(evs)-2]
				if !strings.Contains(last.data, `"stop_reason":"end_turn"`) || strings.Contains(last.data, "warnings") {
					t.Errorf("message_delta %s", last.data)
				}

				reqs := f.eng.Requests()
				if len(reqs) != 1 {
					t.Fatalf("%d engine requests", len(reqs))
				}
				if reqs[0].MaxTokens != 32000 {
					t.Errorf("max_tokens %d", reqs[0].MaxTokens)
				}
				p := reqs[0].Prompt
				user, reminder := strings.Index(p, "Say hi"), strings.Index(p, "<|im_start|>system\n# Environment")
				if user < 0 || reminder < user || !strings.HasSuffix(p, "<|im_end|>\n<|im_start|>assistant\n") {
					t.Errorf("the reminder is not a system turn after the user's (user at %d, reminder at %d); prompt ends %q", user, reminder, p[max(0, len(p)-300):])
				}
				for _, tool := range []string{`"Bash"`, `"Workflow"`, `"Write"`} {
					if !strings.Contains(p, tool) {
						t.Errorf("the prompt lacks the tool %s", tool)
					}
				}
				// The small set defers DeferredToolPlaceholder: nothing loads it, so the model
				// does not see it.
				if strings.Contains(p, "DeferredToolPlaceholder") {
					t.Error("the deferred tool is in the prompt")
				}

				// count_tokens counts the same prompt (the fields it does not read are ignored).
				var start struct {
					Message struct {
						Usage struct {
							InputTokens int `json:"input_tokens"`
						} `json:"usage"`
					} `json:"message"`
				}
				if err := json.Unmarshal([]byte(evs[0].data), &start); err != nil {
					t.Fatal(err)
				}
				resp, b = servertest.Do(t, http.MethodPost, f.srv.URL+"/v1/messages/count_tokens?beta=true", body, headers...)
				var count struct {
					InputTokens int `json:"input_tokens"`
				}
				if err := json.Unmarshal(b, &count); err != nil || resp.StatusCode != http.StatusOK || count.InputTokens != start.Message.Usage.InputTokens {
					t.Errorf("count_tokens %d %s (%v); message_start counted %d", resp.StatusCode, b, err, start.Message.Usage.InputTokens)
				}
			})
		}
	}
}

// TestClaudeCodeToolLoop: Claude Code's second request, built as it builds it from the first
// reply (a thinking block without its text, a Bash tool_use), with the tool's result and a
// reminder in the next user message: 200, and the prompt holds the restored reasoning, the
// call and its result, in the template's tool syntax.
func TestClaudeCodeToolLoop(t *testing.T) {
	const reply = "<think>\nI will write the file.\n</think>\n\n<tool_call>\n{\"name\": \"Bash\", \"arguments\": {\"command\": \"echo hi > out.txt\"}}\n</tool_call>"
	first, headers := agentRequest(t, claudeCode[1])
	f := setup(t, config{ctx: 256 << 10, template: hermesTemplate, reply: reply})
	resp, b := servertest.Do(t, http.MethodPost, f.srv.URL+"/v1/messages?beta=true", first, headers...)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	evs := parseSSE(t, b)
	blocks := checkBlocks(t, evs)
	if len(blocks) != 2 || str(blocks[1].start["type"]) != "tool_use" || !strings.Contains(evs[len(evs)-2].data, `"stop_reason":"tool_use"`) {
		t.Fatalf("first reply %s", b)
	}
	sig := str(blocks[0].deltas[len(blocks[0].deltas)-1]["signature"])
	id, name := str(blocks[1].start["id"]), str(blocks[1].start["name"])
	var input strings.Builder
	for _, d := range blocks[1].deltas {
		input.WriteString(str(d["partial_json"]))
	}

	var req map[string]any
	if err := json.Unmarshal([]byte(first), &req); err != nil {
		t.Fatal(err)
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(input.String()), &args); err != nil {
		t.Fatalf("tool input %q: %v", input.String(), err)
	}
	req["messages"] = append(req["messages"].([]any),
		map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "thinking", "thinking": "", "signature": sig},
			map[string]any{"type": "tool_use", "id": id, "name": name, "input": args},
		}},
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": id, "content": "(Bash completed with no output)", "is_error": false},
			map[string]any{"type": "text", "text": "<system-reminder>The file was written.</system-reminder>", "cache_control": map[string]any{"type": "ephemeral"}},
		}})
	second, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	resp, b = servertest.Do(t, http.MethodPost, f.srv.URL+"/v1/messages?beta=true", string(second), headers...)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("second request: status %d: %s", resp.StatusCode, b)
	}
	checkBlocks(t, parseSSE(t, b))
	p := f.lastPrompt(t)
	want := "<|im_start|>assistant\n<think>I will write the file.</think>\n<tool_call>\n{\"name\": \"Bash\", \"arguments\": {\"command\": \"echo hi > out.txt\"}}\n</tool_call><|im_end|>\n" +
		"<|im_start|>user\n<tool_response name=\"Bash\" id=\"" + id + "\">\n(Bash completed with no output)\n</tool_response><|im_end|>\n" +
		"<|im_start|>user\n<system-reminder>The file was written.</system-reminder><|im_end|>\n<|im_start|>assistant\n"
	if !strings.HasSuffix(p, want) {
		t.Errorf("prompt ends %q\nwant %q", p[max(0, len(p)-len(want)-200):], want)
	}
}
