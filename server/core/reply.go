package core

import (
	"fmt"
	"strings"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
)

// replyShaper turns one choice's raw completion text into what the dialects serve: reasoning
// split from content, and tool calls parsed out of the content. Events keep their token
// counts and logprobs; only their text moves between Text, Reasoning and ToolCalls.
type replyShaper struct {
	reasoning *chat.ReasoningStream
	tools     *chat.ToolStream // nil: no tools, the text stays content
	single    bool             // parallel_tool_calls false: at most one call
	forced    []string         // the tools a forced call may name; nil when not forced
	calls     int              // calls opened so far
	dropped   int              // calls past the first when single
}

// shaping is what every choice of one chat request is shaped with.
type shaping struct {
	open, close string
	startInside bool
	parser      chat.ToolParser // nil: no tool parsing
	single      bool
	forced      []string
}

func (sh *shaping) newShaper() *replyShaper {
	r := &replyShaper{reasoning: chat.NewReasoningStream(sh.open, sh.close, sh.startInside), single: sh.single, forced: sh.forced}
	if sh.parser != nil {
		r.tools = chat.NewToolStream(sh.parser)
	}
	return r
}

// shape rewrites ev in place for the client. Done events get the finish reason tool_calls
// when the reply made calls and ended by itself (a reply cut by the cap stays length, as the
// spec says, and a call it cut is served with the arguments it got, see chat.ToolStream.Cut),
// and a warning when something looked like a call but did not parse.
func (r *replyShaper) shape(ev *llm.Event) {
	switch {
	case ev.Done != nil:
		reasoning, content := r.reasoning.Close()
		var warning string
		if r.tools != nil {
			text, calls := r.tools.Feed(content)
			var rest, suspect string
			var last []llm.ToolCallDelta
			var err error
			if ev.Done.FinishReason == llm.FinishLength {
				var cut *chat.CutCall
				var complete func(string) string // nil: not forced
				if r.forced != nil {
					complete = r.completeName
				}
				rest, last, cut, suspect, err = r.tools.Cut(complete)
				if cut != nil && cut.Name == "" {
					warning = "the token cap cut the reply inside a tool call before its name was complete; that call was left out"
				} else if cut != nil {
					warning = fmt.Sprintf("the token cap cut the reply inside the call to %q: its arguments are incomplete (where a JSON object is required they are the longest prefix that parses, closed); do not run it", cut.Name)
				}
			} else {
				rest, last, suspect, err = r.tools.Close()
			}
			content = text + rest
			ev.ToolCalls = r.keep(append(calls, last...))
			if err != nil {
				warning = fmt.Sprintf("the reply holds text that looks like a tool call but does not parse (%v); it is served as content: %q", err, chat.Clip(suspect, 200))
			}
		}
		ev.Text, ev.Reasoning = content, reasoning
		if r.dropped > 0 {
			warning = JoinWarnings(warning, fmt.Sprintf("parallel_tool_calls is false: the reply made %d more tool calls after the first; they were not served", r.dropped))
		}
		ev.Done.Warning = JoinWarnings(ev.Done.Warning, warning)
		if r.calls > 0 && ev.Done.FinishReason == llm.FinishStop {
			ev.Done.FinishReason = llm.FinishToolCalls
		}
	case ev.Started != nil:
	default:
		reasoning, content := r.reasoning.Feed(ev.Text)
		ev.Reasoning, ev.Text = reasoning, content
		if r.tools != nil {
			text, calls := r.tools.Feed(content)
			ev.Text, ev.ToolCalls = text, r.keep(calls)
		}
	}
}

// completeName returns the one forced tool whose name starts with prefix, or "".
func (r *replyShaper) completeName(prefix string) string {
	found := ""
	for _, n := range r.forced {
		if strings.HasPrefix(n, prefix) {
			if found != "" {
				return ""
			}
			found = n
		}
	}
	return found
}

// keep counts the calls and drops those past the first when only one is allowed.
func (r *replyShaper) keep(deltas []llm.ToolCallDelta) []llm.ToolCallDelta {
	out := deltas[:0]
	for _, d := range deltas {
		if d.Name != "" { // an opening delta
			r.calls++
			if r.single && r.calls > 1 {
				r.dropped++
			}
		}
		if r.single && d.Index > 0 {
			continue
		}
		out = append(out, d)
	}
	if r.single && r.calls > 1 {
		r.calls = 1
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// JoinWarnings joins two warnings about one reply; either may be empty.
func JoinWarnings(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	default:
		return a + "; " + b
	}
}

// Reply gathers one choice's events into the whole reply, for dialects that answer in one
// piece.
type Reply struct {
	content, reasoning strings.Builder
	ToolCalls          []llm.ToolCall
	Logprobs           []llm.TokenLogprob
	args               []strings.Builder
}

// Add takes the next event of the choice.
func (r *Reply) Add(ev llm.Event) {
	r.content.WriteString(ev.Text)
	r.reasoning.WriteString(ev.Reasoning)
	r.Logprobs = append(r.Logprobs, ev.Logprobs...)
	for _, d := range ev.ToolCalls {
		for len(r.ToolCalls) <= d.Index {
			r.ToolCalls = append(r.ToolCalls, llm.ToolCall{})
			r.args = append(r.args, strings.Builder{})
		}
		c := &r.ToolCalls[d.Index]
		if d.ID != "" {
			c.ID = d.ID
		}
		if d.Name != "" {
			c.Name = d.Name
		}
		r.args[d.Index].WriteString(d.Arguments)
		c.Arguments = []byte(r.args[d.Index].String())
	}
}

// Content is the reply's text outside reasoning and tool calls.
func (r *Reply) Content() string { return r.content.String() }

// Reasoning is the reply's reasoning text; "" when the model did not reason.
func (r *Reply) Reasoning() string { return r.reasoning.String() }
