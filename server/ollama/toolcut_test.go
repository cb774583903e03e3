package ollama_test

import (
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"github.com/superfluid/superfluid/server/servertest"
)

// TestChatToolCallCut: a call cut by num_predict comes back in message.tool_calls (its
// arguments the longest prefix that parses, closed) beside the complete calls of the reply,
// with done_reason length and a warning, streamed or not: forced at 10 tokens, forced inside
// the arguments, and auto with a complete call before the cut one.
func TestChatToolCallCut(t *testing.T) {
	const forced = `[{"name": "get_weather", "arguments": {"city": "Oslo"}}, {"name": "get_weather", "arguments": {"city": "Bergen"}}]`
	two := weatherCall + "\n" + strings.Replace(weatherCall, "Oslo", "Bergen", 1)
	cases := []struct {
		name   string
		reply  string
		max    int
		choice string
		args   []string
	}{
		{"forced, cut at 10 tokens", forced, 10, "required", []string{`{}`}},
		{"forced, cut inside the arguments", forced, strings.Index(forced, "Oslo") + 2, "get_weather", []string{`{"city":"Os"}`}},
		{"forced, a complete call and a cut one", forced, strings.Index(forced, "Bergen") + 3, "required", []string{`{"city":"Oslo"}`, `{"city":"Ber"}`}},
		{"auto, a complete call and a cut one", two, strings.Index(two, "Bergen") + 3, "auto", []string{`{"city":"Oslo"}`, `{"city":"Ber"}`}},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			f := setup(t, config{template: servertest.ToolTemplate, reply: tc.reply})
			g := gather(chatAll(t, f, &api.ChatRequest{Stream: ptr(stream), Tools: api.Tools{weatherTool()},
				Options:  map[string]any{"tool_choice": tc.choice, "num_predict": tc.max},
				Messages: []api.Message{{Role: "user", Content: "Weather?"}}}))
			var args []string
			for _, c := range g.calls {
				if c.Function.Name != "get_weather" {
					t.Errorf("%s, stream %v: call %+v", tc.name, stream, c)
				}
				args = append(args, c.Function.Arguments.String())
			}
			if strings.Join(args, "|") != strings.Join(tc.args, "|") || g.last.DoneReason != "length" || strings.Contains(g.content, "get_weather") {
				t.Errorf("%s, stream %v: calls %q done_reason %q content %q; want %q, length, no call in the content",
					tc.name, stream, args, g.last.DoneReason, g.content, tc.args)
			}
		}
	}
}
