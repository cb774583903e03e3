package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

// The Responses API's tool, reasoning and logprobs parameters, converted to the core's form.
//
// Decisions:
//   - tools: function tools only ({type: "function", name, description, parameters, strict},
//     flat); a built-in tool (web_search, file_search, ...) is a 400 unsupported_parameter.
//     strict is echoed as sent (false when absent): a schema is enforced by a grammar only
//     when tool_choice is required or names a function.
//   - tool_choice: "auto", "none", "required" or {type: "function", name}; echoed as sent.
//   - reasoning.effort goes to the template as reasoning_effort; "none" instead sets
//     enable_thinking false (a template that cannot stop reasoning keeps its default), any
//     other effort sets enable_thinking true. Explicit chat_template_kwargs win, then the
//     top-level enable_thinking. reasoning.summary is echoed; summaries stay empty, as the
//     reasoning itself is served in the reasoning item's content.
//   - logprobs: include "message.output_text.logprobs" turns them on, top_logprobs (0-20) sets
//     the alternatives per token. top_logprobs above 0 turns them on too: asking for
//     alternatives and getting none would be a silent drop.

// builtinTools are the tool types OpenAI runs itself; this server runs none of them.
var builtinTools = []string{"file_search", "web_search", "web_search_preview", "computer", "computer_use_preview",
	"mcp", "code_interpreter", "image_generation", "local_shell", "shell", "custom", "apply_patch", "namespace", "tool_search"}

// toResponseTools reads `tools`, naming the entry at fault, and returns the tools for the
// core and their echo.
func toResponseTools(raw []json.RawMessage) ([]chat.Tool, []responseTool, error) {
	tools, echo := make([]chat.Tool, 0, len(raw)), make([]responseTool, 0, len(raw))
	for i, r := range raw {
		param := fmt.Sprintf("tools[%d]", i)
		var w struct {
			Type        string          `json:"type"`
			Name        *string         `json:"name"`
			Description *string         `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			Strict      *bool           `json:"strict"`
			Function    json.RawMessage `json:"function"`
		}
		if err := json.Unmarshal(r, &w); err != nil {
			return nil, nil, invalid(param, fmt.Sprintf("%s must be {\"type\": \"function\", \"name\": ..., \"parameters\": {...}}", param))
		}
		switch {
		case w.Type == "function" && w.Name == nil && len(w.Function) > 0:
			return nil, nil, invalid(param+".name", fmt.Sprintf("%s nests the function under \"function\" as chat completions do; the Responses API takes it flat: {\"type\": \"function\", \"name\": ..., \"parameters\": {...}}", param))
		case w.Type == "function":
		case slices.Contains(builtinTools, w.Type):
			return nil, nil, unsupported(param+".type", fmt.Sprintf("%s is a %s tool; this server runs no built-in tools, only function tools that your code runs", param, w.Type))
		default:
			return nil, nil, invalid(param+".type", fmt.Sprintf("%s.type is %q; use function", param, w.Type))
		}
		if w.Name == nil || *w.Name == "" {
			return nil, nil, invalid(param+".name", fmt.Sprintf("%s has no name; give every function tool a name", param))
		}
		params := bytes.TrimSpace(w.Parameters)
		if string(params) == "null" {
			params = nil
		}
		if len(params) > 0 && params[0] != '{' {
			return nil, nil, invalid(param+".parameters", fmt.Sprintf("%s.parameters must be a JSON Schema object, got %s", param, jsonKind(params)))
		}
		desc := ""
		if w.Description != nil {
			desc = *w.Description
		}
		tools = append(tools, chat.Tool{Name: *w.Name, Description: desc, Parameters: json.RawMessage(params)})
		echo = append(echo, responseTool{Type: "function", Name: *w.Name, Description: w.Description,
			Parameters: json.RawMessage(params), Strict: w.Strict != nil && *w.Strict})
	}
	return tools, echo, nil
}

// toResponseToolChoice reads `tool_choice` and returns the core's choice and its echo.
func toResponseToolChoice(raw json.RawMessage, tools []chat.Tool) (core.ToolChoice, json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return core.ToolChoice{Mode: core.ToolAuto}, json.RawMessage(`"auto"`), nil
	}
	var mode string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &mode); err != nil || (mode != core.ToolAuto && mode != core.ToolNone && mode != core.ToolRequired) {
			return core.ToolChoice{}, nil, invalid("tool_choice", fmt.Sprintf("tool_choice is %s; use auto, none, required or {\"type\": \"function\", \"name\": ...}", raw))
		}
		if mode == core.ToolRequired && len(tools) == 0 {
			return core.ToolChoice{}, nil, invalid("tool_choice", "tool_choice is required but no tools were given; add tools or use tool_choice auto")
		}
		return core.ToolChoice{Mode: mode}, raw, nil
	}
	var obj struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return core.ToolChoice{}, nil, invalid("tool_choice", fmt.Sprintf("invalid type for 'tool_choice': expected a string or an object, got %s", jsonKind(raw)))
	}
	switch {
	case obj.Type == "function":
	case obj.Type == "allowed_tools":
		return core.ToolChoice{}, nil, unsupported("tool_choice", "tool_choice allowed_tools is not supported; send only the tools the model may call, with tool_choice auto or required")
	case slices.Contains(builtinTools, obj.Type):
		return core.ToolChoice{}, nil, unsupported("tool_choice", fmt.Sprintf("tool_choice names the built-in tool %s; this server runs function tools only", obj.Type))
	default:
		return core.ToolChoice{}, nil, invalid("tool_choice.type", fmt.Sprintf("tool_choice.type is %q; use function", obj.Type))
	}
	if obj.Name == "" {
		return core.ToolChoice{}, nil, invalid("tool_choice.name", "tool_choice names no function; send {\"type\": \"function\", \"name\": ...}")
	}
	if !slices.ContainsFunc(tools, func(t chat.Tool) bool { return t.Name == obj.Name }) {
		return core.ToolChoice{}, nil, invalid("tool_choice", fmt.Sprintf("tool_choice names the function %q, which is not in tools; name one of the tools given", obj.Name))
	}
	echo, err := json.Marshal(obj)
	return core.ToolChoice{Mode: core.ToolFunction, Name: obj.Name}, echo, err
}

// reasoningEfforts are OpenAI's values of reasoning.effort.
var reasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh", "max"}

// toTemplateKwargs merges chat_template_kwargs, enable_thinking and reasoning.effort into the
// template variables, in that order of precedence, and returns the reasoning echo.
func toTemplateKwargs(req *responseRequest) (map[string]any, reasoningConfig, error) {
	kwargs := req.ChatTemplateKwargs
	if req.EnableThinking != nil {
		kwargs = withKwarg(kwargs, "enable_thinking", *req.EnableThinking)
	}
	var echo reasoningConfig
	if r := req.Reasoning; r != nil {
		echo = reasoningConfig{Effort: r.Effort, Summary: r.Summary}
		if r.Effort != nil {
			effort := *r.Effort
			if !slices.Contains(reasoningEfforts, effort) {
				return nil, echo, invalid("reasoning.effort", fmt.Sprintf("reasoning.effort is %q; use one of none, minimal, low, medium, high, xhigh, max", effort))
			}
			kwargs = withKwarg(kwargs, "enable_thinking", effort != "none")
			if effort != "none" {
				kwargs = withKwarg(kwargs, "reasoning_effort", effort)
			}
		}
		if s := r.Summary; s != nil && *s != "auto" && *s != "concise" && *s != "detailed" {
			return nil, echo, invalid("reasoning.summary", fmt.Sprintf("reasoning.summary is %q; use auto, concise or detailed", *s))
		}
	}
	return kwargs, echo, nil
}

// includeLogprobs is the include value that asks for output_text logprobs.
const includeLogprobs = "message.output_text.logprobs"

// includables are OpenAI's include values. Those about tools this server does not run can
// name nothing here and are accepted; reasoning.encrypted_content is accepted too (reasoning
// is served as plain text, so a client can always send it back).
var includables = []string{includeLogprobs, "reasoning.encrypted_content", "file_search_call.results", "web_search_call.results",
	"web_search_call.action.sources", "message.input_image.image_url", "computer_call_output.output.image_url", "code_interpreter_call.outputs"}

// toLogprobs reads include and top_logprobs into the engine request.
func toLogprobs(req *responseRequest, gen *llm.Request) error {
	for i, inc := range req.Include {
		if !slices.Contains(includables, inc) {
			return invalid(fmt.Sprintf("include[%d]", i), fmt.Sprintf("include[%d] is %q; this server serves %q", i, inc, includeLogprobs))
		}
	}
	gen.Logprobs = slices.Contains(req.Include, includeLogprobs)
	if req.TopLogprobs != nil {
		n := *req.TopLogprobs
		if n < 0 || n > llm.MaxTopLogprobs {
			return invalid("top_logprobs", fmt.Sprintf("top_logprobs must be between 0 and %d, got %d", llm.MaxTopLogprobs, n))
		}
		gen.TopLogprobs = n
		gen.Logprobs = gen.Logprobs || n > 0
	}
	return nil
}
