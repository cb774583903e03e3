package openai_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/responses"

	"github.com/superfluid/superfluid/server/servertest"
)

// TestCodexLoopReplay replays every request the Codex CLI sent in app.TestAgents' tool loop
// (recorded unmodified, with their headers, by SUPERFLUID_AGENTS_RECORD=1) on the fake engine
// behind the loop's template (Qwen 3), answered as the loop's model answered, so a regression
// in what the agent sends shows without npm: each gets 200 and a well-formed Responses stream
// (every event one the SDK decodes, named by its type, numbered in order, response.created
// first and response.completed last) whose output starts with a reasoning item, the first
// then an exec_command function_call, the one carrying the call's output (and the reasoning
// item sent back) a message with the final text.
func TestCodexLoopReplay(t *testing.T) {
	bodies := servertest.LoopRequests(t, "testdata/agents/codex-*-loop-*.json")
	for _, file := range bodies {
		t.Run(filepath.Base(file), func(t *testing.T) {
			body, headers := loopRequest(t, file)
			result := strings.Contains(body, `"function_call_output"`)
			tmpl, reply := servertest.LoopReply(t, `{"name": "exec_command", "arguments": {"cmd": "echo hello > made-by-codex.txt"}}`, result)
			// One token per byte: the agent's ~40 KB prompt needs a window past it.
			f := setup(t, config{ctx: 1 << 20, reply: reply, template: tmpl})
			resp, b := servertest.Do(t, http.MethodPost, f.srv.URL+"/v1/responses", body, headers...)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
				t.Fatalf("Content-Type %q, want a stream (the agent asked for one)", ct)
			}
			final := checkResponsesStream(t, b)
			var kinds []string
			found := false
			for _, item := range final.Output {
				kinds = append(kinds, item.Type)
				switch {
				case !result && item.Type == "function_call":
					found = true
					if item.Name != "exec_command" || !json.Valid([]byte(item.Arguments.OfString)) || item.CallID == "" {
						t.Errorf("function_call %s(%s) call_id %q, want exec_command with JSON arguments and a call id", item.Name, item.Arguments.OfString, item.CallID)
					}
				case result && item.Type == "message":
					found = true
					var text strings.Builder
					for _, c := range item.Content {
						text.WriteString(c.Text)
					}
					if text.String() != servertest.LoopDone {
						t.Errorf("message %q, want %q", text.String(), servertest.LoopDone)
					}
				}
			}
			if !found || kinds[0] != "reasoning" {
				t.Errorf("output items %v, want reasoning first, then a function_call (first request) or a message (after the tool output)", kinds)
			}
		})
	}
}

// checkResponsesStream checks an SSE body frame by frame and returns the completed response:
// each frame an `event:` line and a `data:` line the SDK decodes, whose type is the event's
// name and whose sequence_number counts from 0; response.created first, response.completed last.
func checkResponsesStream(t *testing.T, b []byte) responses.Response {
	t.Helper()
	if !strings.HasSuffix(string(b), "\n\n") {
		t.Errorf("SSE body does not end with a blank line: %q", b[max(0, len(b)-80):])
	}
	var names []string
	var final responses.Response
	for _, frame := range strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n") {
		if strings.HasPrefix(frame, ":") {
			continue // keep-alive comment
		}
		lines := strings.Split(frame, "\n")
		name, ok := strings.CutPrefix(lines[0], "event: ")
		if len(lines) != 2 || !ok || !strings.HasPrefix(lines[1], "data: ") {
			t.Fatalf("unexpected SSE frame %q", frame)
		}
		var ev responses.ResponseStreamEventUnion
		if err := json.Unmarshal([]byte(strings.TrimPrefix(lines[1], "data: ")), &ev); err != nil {
			t.Fatalf("event %s: %v", name, err)
		}
		if ev.Type != name || ev.SequenceNumber != int64(len(names)) {
			t.Errorf("event %q has type %q and sequence_number %d, want %d", name, ev.Type, ev.SequenceNumber, len(names))
		}
		names = append(names, name)
		if name == "response.completed" {
			final = ev.Response
		}
	}
	if len(names) < 2 || names[0] != "response.created" || names[len(names)-1] != "response.completed" {
		t.Fatalf("events %v, want response.created first and response.completed last", names)
	}
	return final
}

// loopRequest reads a recorded request: its body with the model renamed to the fixture's
// "fake", and its headers as key, value pairs.
func loopRequest(t *testing.T, file string) (string, []string) {
	body, headers := servertest.AgentRequest(t, file, "fake")
	return body, append(headers, "Authorization", "Bearer sk-test")
}
