package anthropic_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/server/servertest"
)

// TestClaudeCodeLoopReplay replays every request Claude Code sent in app.TestAgents' tool loop
// (recorded unmodified, with their headers, by SUPERFLUID_AGENTS_RECORD=1) on the fake engine
// behind the loop's template (Qwen 3), answered as the loop's model answered, so a regression
// in what the agent sends shows without npm: each gets 200 and a well-formed stream starting
// with a signed thinking block, the first then a Bash tool_use block with stop_reason
// tool_use, the one carrying the tool result (and the thinking block sent back) a text block
// with end_turn.
func TestClaudeCodeLoopReplay(t *testing.T) {
	bodies := servertest.LoopRequests(t, "testdata/agents/claude-code-*-loop-*.json")
	for _, file := range bodies {
		t.Run(filepath.Base(file), func(t *testing.T) {
			body, headers := loopRequest(t, file)
			result := strings.Contains(body, `"tool_result"`)
			tmpl, reply := servertest.LoopReply(t, `{"name": "Bash", "arguments": {"command": "echo hello > made-by-claude.txt"}}`, result)
			// One token per byte: the agent's ~50 KB prompt needs a window past it.
			f := setup(t, config{ctx: 1 << 20, reply: reply, template: tmpl})
			resp, b := servertest.Do(t, http.MethodPost, f.srv.URL+"/v1/messages?beta=true", body, headers...)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
				t.Fatalf("Content-Type %q, want a stream (the agent asked for one)", ct)
			}
			evs := parseSSE(t, b)
			blocks := checkBlocks(t, evs)
			want, stop := "tool_use", "tool_use"
			if result {
				want, stop = "text", "end_turn"
			}
			var got []string
			found := false
			for _, bl := range blocks {
				typ := str(bl.start["type"])
				got = append(got, typ)
				if typ == "thinking" && !signed(bl) {
					t.Errorf("thinking block without a signature: %v", bl.deltas)
				}
				if typ != want {
					continue
				}
				found = true
				var joined strings.Builder
				for _, d := range bl.deltas {
					joined.WriteString(str(d["text"]) + str(d["partial_json"]))
				}
				switch {
				case typ == "text" && joined.String() != servertest.LoopDone:
					t.Errorf("text block %q, want %q", joined.String(), servertest.LoopDone)
				case typ == "tool_use" && (str(bl.start["name"]) != "Bash" || !json.Valid([]byte(joined.String()))):
					t.Errorf("tool_use block %s with input %q, want Bash with a JSON object", bl.start["name"], joined.String())
				}
			}
			if !found || got[0] != "thinking" {
				t.Errorf("blocks %v, want thinking first and a %s block", got, want)
			}
			if last := messageDelta(t, evs); last != stop {
				t.Errorf("stop_reason %q, want %q", last, stop)
			}
		})
	}
}

// loopRequest reads a recorded request: its body with the model renamed to the fixture's
// "fake", and its headers as key, value pairs.
func loopRequest(t *testing.T, file string) (string, []string) {
	body, headers := servertest.AgentRequest(t, file, "fake")
	return body, append(headers, "x-api-key", "x")
}

// signed reports whether a thinking block got its signature (Claude Code sends it back).
func signed(bl wireBlock) bool {
	for _, d := range bl.deltas {
		if str(d["type"]) == "signature_delta" && str(d["signature"]) != "" {
			return true
		}
	}
	return false
}

// messageDelta is the stop_reason of a stream's message_delta.
func messageDelta(t *testing.T, evs []event) string {
	t.Helper()
	for _, e := range evs {
		if e.name != "message_delta" {
			continue
		}
		var d struct {
			Delta struct {
				StopReason string `json:"stop_reason"`
			} `json:"delta"`
		}
		if err := json.Unmarshal([]byte(e.data), &d); err != nil {
			t.Fatal(err)
		}
		return d.Delta.StopReason
	}
	t.Fatal("no message_delta")
	return ""
}
