package ollama

import (
	"bytes"
	"encoding/json"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

// tool is one entry of `tools` (Ollama's api.Tool): {"type": "function", "function": {...}}.
type tool struct {
	Type     string       `json:"type"`
	Function toolFunction `json:"function"`
}

type toolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// toolCall is a call in a reply or in an assistant message of the history (Ollama's
// api.ToolCall). Unlike OpenAI's, its arguments are a JSON object, not a string.
type toolCall struct {
	ID       string       `json:"id,omitempty"`
	Function callFunction `json:"function"`
}

type callFunction struct {
	Index     int             `json:"index"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// toTools converts `tools`, naming the entry at fault. The core checks names and schemas.
func toTools(in []tool) ([]chat.Tool, error) {
	out := make([]chat.Tool, 0, len(in))
	for i, t := range in {
		if t.Type != "function" && t.Type != "" {
			return nil, badRequest(`tools[%d].type is %q; only {"type": "function", "function": {...}} tools are served`, i, t.Type)
		}
		params := bytes.TrimSpace(t.Function.Parameters)
		switch {
		case len(params) == 0 || isNull(params):
			params = nil
		case params[0] != '{':
			return nil, badRequest("tools[%d].function.parameters must be a JSON Schema object, got %s", i, describe(params))
		default:
			params = dropNullProperties(params)
		}
		out = append(out, chat.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: params})
	}
	return out, nil
}

// dropNullProperties removes a top-level "properties": null from a parameters schema. The
// official client's typed parameters always write properties, as null for a tool without
// any, and Ollama takes that as "no properties"; a JSON Schema checker rightly refuses null.
// Only the top level's key order changes; the nested schemas are passed on as they came.
func dropNullProperties(params json.RawMessage) json.RawMessage {
	var top map[string]json.RawMessage
	if json.Unmarshal(params, &top) != nil || !isNull(top["properties"]) {
		return params // not ours to judge here: the core checks the schema
	}
	delete(top, "properties")
	b, err := json.Marshal(top)
	if err != nil {
		return params
	}
	return b
}

// toolChoice reads the extension option tool_choice: "auto", "none", "required" or the name
// of a function to call. Ollama has no tool_choice; clients set it through options.
func toolChoice(raw json.RawMessage) (core.ToolChoice, error) {
	if len(raw) == 0 || isNull(raw) {
		return core.ToolChoice{Mode: core.ToolAuto}, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || s == "" {
		return core.ToolChoice{}, badRequest(`option "tool_choice" must be "auto", "none", "required" or the name of a tool, got %s`, describe(raw))
	}
	switch s {
	case core.ToolAuto, core.ToolNone, core.ToolRequired:
		return core.ToolChoice{Mode: s}, nil
	default:
		return core.ToolChoice{Mode: core.ToolFunction, Name: s}, nil
	}
}

// parallelCalls reads the extension option parallel_tool_calls (OpenAI's field): false
// allows at most one call per reply, which also makes a forced call a single call rather than
// a list the model may keep adding to. nil (absent) allows several.
func parallelCalls(raw json.RawMessage) (*bool, error) {
	if len(raw) == 0 || isNull(raw) {
		return nil, nil
	}
	var on bool
	if err := json.Unmarshal(raw, &on); err != nil {
		return nil, badRequest(`option "parallel_tool_calls" must be a boolean, got %s`, describe(raw))
	}
	return &on, nil
}

// toCalls converts an assistant message's tool_calls. Arguments must be a JSON object (absent
// or null mean none); they are passed on compacted, in the client's key order.
func toCalls(i int, in []toolCall) ([]chat.ToolCall, error) {
	out := make([]chat.ToolCall, 0, len(in))
	for j, c := range in {
		if c.Function.Name == "" {
			return nil, badRequest("messages[%d].tool_calls[%d].function.name is empty; every call in the history needs the name of the function it called", i, j)
		}
		raw := bytes.TrimSpace(c.Function.Arguments)
		if len(raw) == 0 || isNull(raw) {
			raw = []byte("{}")
		}
		var args bytes.Buffer
		if raw[0] != '{' || json.Compact(&args, raw) != nil {
			return nil, badRequest("messages[%d].tool_calls[%d].function.arguments must be a JSON object such as {\"city\": \"Oslo\"}, got %s", i, j, describe(raw))
		}
		out = append(out, chat.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: args.Bytes()})
	}
	return out, nil
}

// pairResults gives each tool result that has no tool_call_id the id of the call it answers,
// for templates that print the id: Ollama's clients name the tool (tool_name) instead. The
// call is the first one not yet answered of the latest assistant turn with calls that has the
// result's tool_name, or with no tool_name the first one not yet answered (whose name it then
// takes). A result whose tool_name no open call has is left as it came.
func pairResults(msgs []chat.Message) {
	var open []chat.ToolCall // the latest turn's calls not yet answered
	for i := range msgs {
		m := &msgs[i]
		switch {
		case m.Role == "assistant" && len(m.ToolCalls) > 0:
			open = append([]chat.ToolCall(nil), m.ToolCalls...)
		case m.Role == "tool" && len(open) > 0:
			k := -1
			for j, c := range open {
				if c.Name == m.Name {
					k = j
					break
				}
			}
			if k < 0 && m.Name != "" {
				continue // it names no call of the turn: leave it as the client sent it
			}
			k = max(k, 0)
			if m.ToolCallID == "" {
				m.ToolCallID = open[k].ID
			}
			if m.Name == "" {
				m.Name = open[k].Name
			}
			open = append(open[:k], open[k+1:]...)
		}
	}
}

// fromCalls is a reply's tool calls in the wire shape (see wireCall).
func fromCalls(calls []llm.ToolCall) []toolCall {
	var out []toolCall
	for i, c := range calls {
		out = append(out, wireCall(i, c))
	}
	return out
}

// wireCall is call i of a reply in the wire shape. A call whose arguments are not a JSON
// object was cut by the token cap (complete calls always are one): Ollama's arguments must be
// an object, so it gets the longest prefix of them that parses, closed (the core's warning
// says the call is incomplete).
func wireCall(i int, c llm.ToolCall) toolCall {
	args := bytes.TrimSpace(c.Arguments)
	if len(args) == 0 {
		args = []byte("{}")
	}
	if args[0] != '{' || !json.Valid(args) {
		args, _ = chat.CloseJSON(string(args))
	}
	return toolCall{ID: c.ID, Function: callFunction{Index: i, Name: c.Name, Arguments: args}}
}

// complete reports whether a streamed call's arguments are whole: a JSON object.
func complete(c llm.ToolCall) bool {
	args := bytes.TrimSpace(c.Arguments)
	return len(args) > 0 && args[0] == '{' && json.Valid(args)
}

// callStream gathers streamed tool-call deltas into whole calls: Ollama sends each call in a
// line of its own once it is complete.
type callStream struct {
	calls []llm.ToolCall
	sent  []bool
}

// add takes an event's deltas and returns the calls they completed (their arguments form a
// JSON object).
func (s *callStream) add(ds []llm.ToolCallDelta) []toolCall {
	for _, d := range ds {
		for len(s.calls) <= d.Index {
			s.calls = append(s.calls, llm.ToolCall{})
			s.sent = append(s.sent, false)
		}
		c := &s.calls[d.Index]
		if d.ID != "" {
			c.ID = d.ID
		}
		if d.Name != "" {
			c.Name = d.Name
		}
		c.Arguments = append(c.Arguments, d.Arguments...)
	}
	var out []toolCall
	for i, c := range s.calls {
		if s.sent[i] || c.Name == "" || len(c.Arguments) == 0 {
			continue // not opened, or no arguments yet
		}
		if complete(c) {
			s.sent[i] = true
			out = append(out, wireCall(i, c))
		}
	}
	return out
}

// rest returns the calls never completed, at the end of the reply: a call the token cap cut.
func (s *callStream) rest() []toolCall {
	var out []toolCall
	for i, c := range s.calls {
		if s.sent[i] || c.Name == "" {
			continue
		}
		s.sent[i] = true
		out = append(out, wireCall(i, c))
	}
	return out
}

// logprob is one completion token's log probability (Ollama's api.Logprob).
type logprob struct {
	Token       string       `json:"token"`
	Logprob     float64      `json:"logprob"`
	Bytes       []int        `json:"bytes,omitempty"`
	TopLogprobs []topLogprob `json:"top_logprobs,omitempty"`
}

// topLogprob is one alternative at a token position (Ollama's api.TokenLogprob).
type topLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes,omitempty"`
}

// fromLogprobs converts the engine's logprobs; nil when there are none.
func fromLogprobs(in []llm.TokenLogprob) []logprob {
	if len(in) == 0 {
		return nil
	}
	out := make([]logprob, len(in))
	for i, t := range in {
		out[i] = logprob{Token: t.Token, Logprob: t.Logprob, Bytes: byteInts(t.Bytes)}
		if len(t.Top) > 0 {
			out[i].TopLogprobs = make([]topLogprob, len(t.Top))
			for k, a := range t.Top {
				out[i].TopLogprobs[k] = topLogprob{Token: a.Token, Logprob: a.Logprob, Bytes: byteInts(a.Bytes)}
			}
		}
	}
	return out
}

// byteInts is Ollama's bytes field: the token's bytes as integers (omitted when empty).
func byteInts(b []byte) []int {
	if len(b) == 0 {
		return nil
	}
	out := make([]int, len(b))
	for i, c := range b {
		out[i] = int(c)
	}
	return out
}

// setLogprobs validates top_logprobs (0-20, as Ollama) and asks the engine for logprobs.
// top_logprobs applies only with logprobs true, as in Ollama.
func setLogprobs(on bool, top int, gen *llm.Request) error {
	if top < 0 || top > llm.MaxTopLogprobs {
		return badRequest("top_logprobs must be between 0 and %d, got %d", llm.MaxTopLogprobs, top)
	}
	if on {
		gen.Logprobs, gen.TopLogprobs = true, top
	}
	return nil
}
