package anthropic

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/server/core"
)

// toolNamePattern is Anthropic's rule for a custom tool's name.
const toolNamePattern = "^[a-zA-Z0-9_-]{1,64}$"

var toolName = regexp.MustCompile(toolNamePattern)

// declared is one tool of the request, in declaration order.
type declared struct {
	tool     chat.Tool
	deferred bool // defer_loading: offered once a tool_reference names it
}

// toTools converts `tools`: custom tools, each with an object input_schema. A typed tool
// (server tools such as web_search_*, and Anthropic-defined ones such as bash_* whose schema
// the model is meant to know) is offered as a function tool when it carries an input_schema,
// and otherwise dropped with a warning: this server runs no tools and a local model knows no
// built-in schema. Schemas are checked further by the core (the same rules for every dialect).
func toTools(raws []json.RawMessage, warn *warnings) (tools []declared, searchDropped bool, err error) {
	for i, raw := range raws {
		if kind(raw) != "an object" {
			return nil, false, invalid("tools.%d: Input should be a valid dictionary like {\"name\":...,\"input_schema\":{\"type\":\"object\",...}}, got %s", i, kind(raw))
		}
		var t tool
		if err := json.Unmarshal(raw, &t); err != nil {
			var typeErr *json.UnmarshalTypeError
			if errors.As(err, &typeErr) && typeErr.Field != "" {
				return nil, false, invalid("tools.%d.%s: Input should be %s", i, typeErr.Field, friendlyType(typeErr.Type.String()))
			}
			return nil, false, decodeError(err)
		}
		if t.Type != "" && t.Type != "custom" && !isSet(t.InputSchema) {
			warn.add("tools.%d: %q is a server tool, which this server does not run; it was dropped (declare it as a custom tool with an input_schema to offer it to the model)", i, t.Type)
			searchDropped = searchDropped || strings.HasPrefix(t.Type, "tool_search_tool_")
			continue
		}
		switch {
		case t.Name == nil || *t.Name == "":
			return nil, false, invalid("tools.%d.name: Field required", i)
		case !toolName.MatchString(*t.Name):
			return nil, false, invalid("tools.%d.name: String should match pattern '%s', got %q (%d characters); rename the tool", i, toolNamePattern, truncate(*t.Name, 80), utf8.RuneCountInString(*t.Name))
		}
		if err := checkInputSchema(i, t.InputSchema); err != nil {
			return nil, false, err
		}
		tools = append(tools, declared{tool: chat.Tool{Name: *t.Name, Description: t.Description, Parameters: t.InputSchema}, deferred: t.DeferLoading})
	}
	return tools, searchDropped, nil
}

// truncate shortens s to at most n bytes for a message, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

// offered are the tools the model sees: those not deferred, and the deferred ones a
// tool_reference block has loaded (all of them when the request's tool search tool was
// dropped, since nothing here would ever load them), in declaration order.
func offered(tools []declared, loaded map[string]bool, all bool) []chat.Tool {
	out := make([]chat.Tool, 0, len(tools))
	for _, d := range tools {
		if !d.deferred || all || loaded[d.tool.Name] {
			out = append(out, d.tool)
		}
	}
	return out
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
// `thinking` and reasoning_effort from output_config.effort, unless chat_template_kwargs sets
// them (the explicit variable wins, as on the OpenAI routes).
func (c *conversation) kwargs() map[string]any {
	kwargs := c.ChatTemplateKwargs
	set := func(k string, v any) {
		if _, ok := kwargs[k]; ok {
			return
		}
		out := make(map[string]any, len(kwargs)+1)
		for k, v := range kwargs {
			out[k] = v
		}
		out[k] = v
		kwargs = out
	}
	if c.Thinking != nil {
		set("enable_thinking", c.Thinking.Type != "disabled")
	}
	if oc := c.OutputConfig; oc != nil && oc.Effort != nil {
		set("reasoning_effort", *oc.Effort)
	}
	return kwargs
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
