package anthropic

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"hash"
	"strings"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/server/core"
)

// toTools converts `tools`: custom tools only, each with an object input_schema. Names and
// schemas are checked further by the core (the same rules for every dialect).
func toTools(raws []json.RawMessage) ([]chat.Tool, error) {
	out := make([]chat.Tool, 0, len(raws))
	for i, raw := range raws {
		if kind(raw) != "an object" {
			return nil, invalid("tools.%d: Input should be a valid dictionary like {\"name\":...,\"input_schema\":{\"type\":\"object\",...}}, got %s", i, kind(raw))
		}
		var t tool
		if err := json.Unmarshal(raw, &t); err != nil {
			var typeErr *json.UnmarshalTypeError
			if errors.As(err, &typeErr) && typeErr.Field != "" {
				return nil, invalid("tools.%d.%s: Input should be %s", i, typeErr.Field, friendlyType(typeErr.Type.String()))
			}
			return nil, decodeError(err)
		}
		switch {
		case t.Type != "" && t.Type != "custom":
			return nil, invalid("tools.%d.type: %q is a server tool, which this server does not run; "+
				"declare it as a custom tool (name, description, input_schema) and run it in the client", i, t.Type)
		case t.Name == nil || *t.Name == "":
			return nil, invalid("tools.%d.name: Field required", i)
		}
		if err := checkInputSchema(i, t.InputSchema); err != nil {
			return nil, err
		}
		out = append(out, chat.Tool{Name: *t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	return out, nil
}

// checkInputSchema requires an object schema: the input of a tool_use is always a JSON object.
func checkInputSchema(i int, schema json.RawMessage) error {
	if !isSet(schema) {
		return invalid(`tools.%d.input_schema: Field required; send a JSON Schema such as {"type":"object","properties":{...}}`, i)
	}
	if kind(schema) != "an object" {
		return invalid("tools.%d.input_schema: Input should be a valid dictionary (a JSON Schema object), got %s", i, kind(schema))
	}
	var top struct {
		Type json.RawMessage `json:"type"`
	}
	if err := json.Unmarshal(schema, &top); err != nil {
		return invalid("tools.%d.input_schema: %v", i, err)
	}
	if isSet(top.Type) && string(top.Type) != `"object"` {
		return invalid("tools.%d.input_schema.type: Input should be 'object', got %s; a tool's input is a JSON object", i, top.Type)
	}
	return nil
}

// toToolChoice converts `tool_choice`; the pointer is false when disable_parallel_tool_use is
// set (at most one call), nil otherwise.
func toToolChoice(tc *toolChoice) (core.ToolChoice, *bool, error) {
	if tc == nil {
		return core.ToolChoice{Mode: core.ToolAuto}, nil, nil
	}
	var parallel *bool
	if tc.DisableParallelToolUse {
		parallel = new(bool)
	}
	switch tc.Type {
	case "auto":
		return core.ToolChoice{Mode: core.ToolAuto}, parallel, nil
	case "any":
		return core.ToolChoice{Mode: core.ToolRequired}, parallel, nil
	case "tool":
		if tc.Name == "" {
			return core.ToolChoice{}, nil, invalid("tool_choice.name: Field required; name the tool the model must use")
		}
		return core.ToolChoice{Mode: core.ToolFunction, Name: tc.Name}, parallel, nil
	case "none":
		return core.ToolChoice{Mode: core.ToolNone}, nil, nil
	case "":
		return core.ToolChoice{}, nil, invalid("tool_choice.type: Field required; use auto, any, tool or none")
	default:
		return core.ToolChoice{}, nil, invalid("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none', got %q", tc.Type)
	}
}

// checkToolChoice refuses a tool_choice naming a tool that is not in tools, in Anthropic's
// terms (the core checks it too, for every dialect).
func checkToolChoice(choice core.ToolChoice, tools []chat.Tool) error {
	if choice.Mode != core.ToolFunction {
		return nil
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		if t.Name == choice.Name {
			return nil
		}
		names[i] = t.Name
	}
	if len(names) == 0 {
		return invalid("tool_choice.name: %q names a tool, but no tools were given; add it to tools", choice.Name)
	}
	return invalid("tool_choice.name: %q is not one of the tools given (%s); name one of them", choice.Name, strings.Join(names, ", "))
}

// minThinkingBudget is Anthropic's least budget_tokens.
const minThinkingBudget = 1024

// checkThinking validates the `thinking` config as Anthropic does. The budget is checked and
// not enforced: local templates only switch reasoning on or off, and max_tokens caps the whole
// reply, reasoning included.
func checkThinking(th *thinking) error {
	if th == nil {
		return nil
	}
	switch th.Type {
	case "enabled":
		if th.BudgetTokens == nil {
			return invalid("thinking.enabled.budget_tokens: Field required")
		}
		if *th.BudgetTokens < minThinkingBudget {
			return invalid("thinking.enabled.budget_tokens: Input should be greater than or equal to %d, got %d", minThinkingBudget, *th.BudgetTokens)
		}
	case "adaptive", "between_tools", "disabled":
	case "":
		return invalid("thinking.type: Field required; use enabled, adaptive or disabled")
	default:
		return invalid("thinking.type: Input should be 'enabled', 'adaptive' or 'disabled', got %q", th.Type)
	}
	switch th.Display {
	case "", "summarized", "omitted":
		return nil
	default:
		return invalid("thinking.display: Input should be 'summarized' or 'omitted', got %q", th.Display)
	}
}

// kwargs are the chat template variables: chat_template_kwargs, with enable_thinking set from
// `thinking` unless chat_template_kwargs sets it (the explicit variable wins).
func (c *conversation) kwargs() map[string]any {
	kwargs := c.ChatTemplateKwargs
	if c.Thinking == nil {
		return kwargs
	}
	if _, set := kwargs["enable_thinking"]; set {
		return kwargs
	}
	out := make(map[string]any, len(kwargs)+1)
	for k, v := range kwargs {
		out[k] = v
	}
	out["enable_thinking"] = c.Thinking.Type != "disabled"
	return out
}

// omitsThinking reports whether thinking blocks are served without their text (display
// "omitted"): the block and its signature stay, so a client's turn structure is the same.
func (c *conversation) omitsThinking() bool {
	return c.Thinking != nil && c.Thinking.Display == "omitted"
}

// toolUseID is a call's id as Anthropic clients expect it ("toolu_..."); the core's ids are
// OpenAI's ("call_..."). The hex part is kept, so both dialects' ids name the same call.
func toolUseID(id string) string {
	return "toolu_" + strings.TrimPrefix(id, "call_")
}

// signer computes a thinking block's signature. Anthropic clients require the field and pass
// it back unchanged; this server reads nothing from it, so it is an opaque digest of the text
// (base64 of a SHA-256), the same streamed or not.
type signer struct{ h hash.Hash }

func newSigner() *signer {
	s := &signer{h: sha256.New()}
	s.h.Write([]byte("superfluid thinking\x00"))
	return s
}

func (s *signer) add(text string) { s.h.Write([]byte(text)) }

func (s *signer) signature() string { return base64.StdEncoding.EncodeToString(s.h.Sum(nil)) }

// signature is the signature of a whole thinking text.
func signature(text string) string {
	s := newSigner()
	s.add(text)
	return s.signature()
}
