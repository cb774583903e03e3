package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

// tool is one entry of `tools`: {"type": "function", "function": {...}}.
type tool struct {
	Type     string        `json:"type"`
	Function *toolFunction `json:"function"`
}

type toolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

// toolChoice is `tool_choice`: "auto", "none", "required", or {"type": "function",
// "function": {"name": ...}}.
type toolChoice struct {
	Mode string
	Name string
	set  bool
}

func (t *toolChoice) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	t.set = true
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &t.Mode)
	}
	var obj struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return err
	}
	t.Mode, t.Name = obj.Type, obj.Function.Name
	if t.Mode == "" {
		t.Mode = "function"
	}
	return nil
}

// wireToolCall is a call in a reply, or in an assistant message of the history.
type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function callFunction `json:"function"`
}

type callFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// streamToolCall is one tool-call delta in a streamed chunk.
type streamToolCall struct {
	Index    int                `json:"index"`
	ID       string             `json:"id,omitempty"`
	Type     string             `json:"type,omitempty"`
	Function streamCallFunction `json:"function"`
}

type streamCallFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// toTools converts `tools`, naming the entry at fault.
func toTools(in []tool) ([]chat.Tool, error) {
	out := make([]chat.Tool, 0, len(in))
	for i, t := range in {
		param := fmt.Sprintf("tools[%d]", i)
		if t.Type != "function" || t.Function == nil {
			return nil, invalid(param, fmt.Sprintf("%s must be {\"type\": \"function\", \"function\": {...}}; only function tools are served", param))
		}
		params := t.Function.Parameters
		if len(params) > 0 && string(params) != "null" && (params[0] != '{') {
			return nil, invalid(param+".function.parameters", fmt.Sprintf("%s.function.parameters must be a JSON Schema object", param))
		}
		if string(params) == "null" {
			params = nil
		}
		out = append(out, chat.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: params})
	}
	return out, nil
}

// toToolChoice converts `tool_choice`.
func toToolChoice(tc toolChoice) (core.ToolChoice, error) {
	switch tc.Mode {
	case "", "auto":
		return core.ToolChoice{Mode: core.ToolAuto}, nil
	case "none", "required":
		return core.ToolChoice{Mode: tc.Mode}, nil
	case "function":
		if tc.Name == "" {
			return core.ToolChoice{}, invalid("tool_choice.function.name", "tool_choice names no function; send {\"type\": \"function\", \"function\": {\"name\": ...}}")
		}
		return core.ToolChoice{Mode: core.ToolFunction, Name: tc.Name}, nil
	default:
		return core.ToolChoice{}, invalid("tool_choice", fmt.Sprintf("tool_choice must be auto, none, required or a function, got %q", tc.Mode))
	}
}

// historyArguments reads a call's arguments sent back in the history: a JSON object (empty
// is {}), or the start of one that the token cap cut (a reply with finish_reason length, or
// an incomplete response, serves a cut call's arguments as generated), rendered closed
// (chat.CloseJSON) so that a conversation holding a cut call can go on. ok is false for
// anything else.
func historyArguments(raw string) (args json.RawMessage, ok bool) {
	b := bytes.TrimSpace([]byte(raw))
	if len(b) == 0 {
		return json.RawMessage("{}"), true
	}
	if b[0] != '{' {
		return nil, false
	}
	if json.Valid(b) {
		return b, true
	}
	var v any
	var syn *json.SyntaxError
	if err := json.Unmarshal(b, &v); !errors.As(err, &syn) || syn.Offset != int64(len(b)) {
		return nil, false // not cut: malformed
	}
	closed, _ := chat.CloseJSON(string(b))
	return closed, true
}

// toCalls converts an assistant message's tool_calls; arguments must be a JSON object (or a
// cut one, see historyArguments).
func toCalls(i int, in []wireToolCall) ([]chat.ToolCall, error) {
	out := make([]chat.ToolCall, 0, len(in))
	for j, c := range in {
		param := fmt.Sprintf("messages[%d].tool_calls[%d].function.arguments", i, j)
		args, ok := historyArguments(c.Function.Arguments)
		if !ok {
			return nil, invalid(param, fmt.Sprintf("%s is not a JSON object: %.80q", param, c.Function.Arguments))
		}
		if c.Function.Name == "" {
			return nil, invalid(fmt.Sprintf("messages[%d].tool_calls[%d].function.name", i, j), "a tool call in the history has no function name")
		}
		out = append(out, chat.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: args})
	}
	return out, nil
}

// fromCalls is a reply's tool calls in the wire shape; nil when there are none.
func fromCalls(calls []llm.ToolCall) []wireToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]wireToolCall, len(calls))
	for i, c := range calls {
		out[i] = wireToolCall{ID: c.ID, Type: "function", Function: callFunction{Name: c.Name, Arguments: string(c.Arguments)}}
	}
	return out
}

// fromDeltas is the stream shape of tool-call deltas: the opening one carries id, type and
// name with empty arguments, the rest only arguments.
func fromDeltas(ds []llm.ToolCallDelta) []streamToolCall {
	out := make([]streamToolCall, len(ds))
	for i, d := range ds {
		out[i] = streamToolCall{Index: d.Index, ID: d.ID, Function: streamCallFunction{Name: d.Name, Arguments: d.Arguments}}
		if d.ID != "" {
			out[i].Type = "function"
		}
	}
	return out
}

// choiceLogprobs is a choice's `logprobs` object.
type choiceLogprobs struct {
	Content []tokenLogprob `json:"content"`
	Refusal []tokenLogprob `json:"refusal"`
}

type tokenLogprob struct {
	Token       string       `json:"token"`
	Logprob     float64      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []topLogprob `json:"top_logprobs"`
}

type topLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// fromLogprobs converts the engine's logprobs; nil when none were asked for.
func fromLogprobs(in []llm.TokenLogprob, asked bool) *choiceLogprobs {
	if !asked {
		return nil
	}
	out := &choiceLogprobs{Content: make([]tokenLogprob, len(in)), Refusal: []tokenLogprob{}}
	for i, t := range in {
		top := make([]topLogprob, len(t.Top))
		for k, a := range t.Top {
			top[k] = topLogprob{Token: a.Token, Logprob: a.Logprob, Bytes: byteInts(a.Bytes)}
		}
		out.Content[i] = tokenLogprob{Token: t.Token, Logprob: t.Logprob, Bytes: byteInts(t.Bytes), TopLogprobs: top}
	}
	return out
}

// byteInts is OpenAI's bytes field: the UTF-8 bytes as a list of integers.
func byteInts(b []byte) []int {
	out := make([]int, len(b))
	for i, c := range b {
		out[i] = int(c)
	}
	return out
}
