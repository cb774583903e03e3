package core

import (
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
)

// shapeAll feeds text to a shaper in pieces of size n, ends it with reason, and gathers the
// reply the way a non-streaming dialect does.
func shapeAll(sh *shaping, text string, n int, reason string) (*Reply, llm.Done) {
	r := sh.newShaper()
	var reply Reply
	for i := 0; i < len(text); i += n {
		ev := llm.Event{Text: text[i:min(len(text), i+n)], Tokens: 1}
		r.shape(&ev)
		reply.Add(ev)
	}
	ev := llm.Event{Done: &llm.Done{FinishReason: reason}}
	r.shape(&ev)
	reply.Add(ev)
	return &reply, *ev.Done
}

func TestReplyShaper(t *testing.T) {
	hermes := &shaping{open: "<think>", close: "</think>", parser: chat.HermesToolParser{}}
	call := `<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>`
	cases := []struct {
		name      string
		sh        *shaping
		text      string
		reason    string
		content   string
		reasoning string
		calls     []string // name + arguments
		finish    string
		warning   string
	}{
		{"plain", hermes, "Hello there.", "stop", "Hello there.", "", nil, "stop", ""},
		{"reasoning then content", hermes, "<think>\nhmm\n</think>\n\nHi", "stop", "Hi", "hmm", nil, "stop", ""},
		{"reasoning then call", hermes, "<think>plan</think>\n" + call, "stop", "", "plan", []string{`f{"x":1}`}, "tool_calls", ""},
		{"two calls", hermes, call + "\n" + call, "stop", "", "", []string{`f{"x":1}`, `f{"x":1}`}, "tool_calls", ""},
		{"cut call", hermes, call[:30], "length", "", "", []string{`f`}, "length", `cut the reply inside the call to "f"`},
		{"cut in the arguments", hermes, call[:45], "length", "", "", []string{`f{"x": 1`}, "length", `cut the reply inside the call to "f"`},
		{"cut before the name", hermes, call[:18], "length", call[:18], "", nil, "length", "does not parse"},
		{"forced, cut before the name of one of two tools", &shaping{parser: chat.GenericToolParser{}, forced: []string{"f", "g"}},
			`[{"name":"`, "length", "", "", nil, "length", "before its name was complete"},
		{"forced, one whole call and one cut", &shaping{parser: chat.GenericToolParser{}, forced: []string{"f", "get_weather"}},
			`[{"name":"f","arguments":{"x":1}},{"name":"get_w`, "length", "", "", []string{`f{"x":1}`, `get_weather`}, "length", `inside the call to "get_weather"`},
		{"call then cap", hermes, call, "length", "", "", []string{`f{"x":1}`}, "length", ""},
		{"single", &shaping{open: "<think>", close: "</think>", parser: chat.HermesToolParser{}, single: true},
			call + call, "stop", "", "", []string{`f{"x":1}`}, "tool_calls", "parallel_tool_calls is false"},
		{"no tools", &shaping{open: "<think>", close: "</think>"}, call, "stop", call, "", nil, "stop", ""},
		{"forced generic", &shaping{open: "<think>", close: "</think>", parser: chat.GenericToolParser{}},
			`[{"name":"f","arguments":{"x":1}},{"name":"g","arguments":{}}]`, "stop", "", "", []string{`f{"x":1}`, `g{}`}, "tool_calls", ""},
		{"starts inside reasoning", &shaping{open: "<think>", close: "</think>", startInside: true}, "deep thought</think>Answer", "stop", "Answer", "deep thought", nil, "stop", ""},
	}
	for _, tc := range cases {
		for _, n := range []int{1, 3, 1000} {
			reply, done := shapeAll(tc.sh, tc.text, n, tc.reason)
			var calls []string
			for _, c := range reply.ToolCalls {
				calls = append(calls, c.Name+string(c.Arguments))
				if !strings.HasPrefix(c.ID, "call_") {
					t.Errorf("%s/%d: call id %q", tc.name, n, c.ID)
				}
			}
			if reply.Content() != tc.content || reply.Reasoning() != tc.reasoning || strings.Join(calls, "|") != strings.Join(tc.calls, "|") {
				t.Errorf("%s/%d: content %q reasoning %q calls %v; want %q %q %v", tc.name, n, reply.Content(), reply.Reasoning(), calls, tc.content, tc.reasoning, tc.calls)
			}
			if done.FinishReason != tc.finish || (tc.warning == "") != (done.Warning == "") || !strings.Contains(done.Warning, tc.warning) {
				t.Errorf("%s/%d: finish %q warning %q; want %q %q", tc.name, n, done.FinishReason, done.Warning, tc.finish, tc.warning)
			}
		}
	}
}
