package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/server/core"
)

// The Responses API's tools and tool_choice, converted to the core's form.
//
// Decisions:
//   - function tools ({type: "function", name, description, parameters, strict}, flat) are
//     offered as sent. strict is echoed as sent (false when absent): a schema is enforced by
//     a grammar only when tool_choice is required or names a function.
//   - custom tools ({type: "custom", name, description, format}) are offered as a function of
//     one string, "input"; the call comes back as a custom_tool_call item holding that string.
//     A grammar format (lark, regex) is shown to the model in the input's description but not
//     enforced, with a warning.
//   - namespace tools ({type: "namespace", name, description, tools}) offer their inner
//     function and custom tools; a call comes back with its inner name and the namespace, the
//     way OpenAI's function_call items carry it, and a call sent back with a namespace maps to
//     the same tool. The model sees a tool's inner name when no other offered tool has it;
//     when several do, each namespaced one is offered as "<namespace>__<name>" (top-level tools
//     keep their names), so every name the model sees stands for one tool. A namespace without
//     tools offers nothing: dropped with a warning.
//   - built-in tools (web_search, file_search, code_interpreter, mcp, shell, ...) and types
//     this server does not know are dropped with a warning: the model is never told of them,
//     so a request from an agent that lists them still runs. A tool_choice that forces one
//     cannot be served: 400.
//   - names are checked as OpenAI checks them (^[a-zA-Z0-9_-]+$, at most 64 characters), and
//     so is the length of tools (at most 128 entries).
//   - tool_choice: "auto", "none", "required", {type: "function", name} (a namespaced
//     function by its inner name, with or without "namespace") or {type: "custom", name};
//     echoed as sent.

// maxTools is OpenAI's limit on the entries of tools.
const maxTools = 128

// maxToolName is OpenAI's limit on a tool's (and a namespace's) name.
const maxToolName = 64

var toolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// builtinTools are the tool types OpenAI runs itself; this server runs none of them.
var builtinTools = []string{"file_search", "web_search", "web_search_preview", "computer", "computer_use_preview",
	"mcp", "code_interpreter", "image_generation", "local_shell", "shell", "apply_patch", "tool_search"}

// toolRef is a tool as the client names it: a function or custom tool, maybe in a namespace.
type toolRef struct {
	custom    bool
	namespace string
	name      string
}

// toolSet is a request's tools: what the model is offered, and how its names map back.
type toolSet struct {
	tools []chat.Tool
	echo  []json.RawMessage
	refs  map[string]toolRef // the model's name → the tool
	names map[toolRef]string // the tool → the model's name
	// dropped are the built-in tool types left out (for tool_choice).
	dropped  []string
	warnings []string
}

// modelName is the name the model knows a tool by. A tool this request does not offer (a
// call from an earlier turn) keeps its inner name.
func (ts *toolSet) modelName(custom bool, namespace, name string) string {
	if n, ok := ts.names[toolRef{custom, namespace, name}]; ok {
		return n
	}
	return name
}

// ref is the tool behind a name the model called; a name not offered is a plain function.
func (ts *toolSet) ref(name string) toolRef {
	if r, ok := ts.refs[name]; ok {
		return r
	}
	return toolRef{name: name}
}

// wireTool holds the fields of every tool type this server reads.
type wireTool struct {
	Type        string            `json:"type"`
	Name        *string           `json:"name"`
	Description *string           `json:"description"`
	Parameters  json.RawMessage   `json:"parameters"`
	Strict      *bool             `json:"strict"`
	Function    json.RawMessage   `json:"function"`
	Format      json.RawMessage   `json:"format"`
	Tools       []json.RawMessage `json:"tools"`
}

// offer is one tool to put before the model.
type offer struct {
	param string
	ref   toolRef
	tool  chat.Tool
}

// toResponseTools reads `tools`, naming the entry at fault.
func toResponseTools(raw []json.RawMessage) (*toolSet, error) {
	if len(raw) > maxTools {
		return nil, &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "tools", Code: "array_above_max_length",
			Message: fmt.Sprintf("Invalid 'tools': array too long. Expected an array with maximum length %d, but got an array with length %d instead.", maxTools, len(raw))}
	}
	ts := &toolSet{refs: map[string]toolRef{}, names: map[toolRef]string{}}
	var offers []offer
	for i, r := range raw {
		param := fmt.Sprintf("tools[%d]", i)
		var w wireTool
		if err := json.Unmarshal(r, &w); err != nil {
			return nil, invalid(param, fmt.Sprintf("%s must be {\"type\": \"function\", \"name\": ..., \"parameters\": {...}}", param))
		}
		switch w.Type {
		case "function", "custom":
			o, echo, err := readTool(param, "", &w, r)
			if err != nil {
				return nil, err
			}
			offers = append(offers, o)
			ts.echo = append(ts.echo, echo)
			if w.Type == "custom" {
				ts.warnings = append(ts.warnings, customFormatWarning(param, &w)...)
			}
		case "namespace":
			inner, err := ts.readNamespace(param, &w)
			if err != nil {
				return nil, err
			}
			if len(inner) > 0 {
				offers = append(offers, inner...)
				ts.echo = append(ts.echo, compact(r))
			}
		default:
			ts.dropped = append(ts.dropped, w.Type)
			ts.warnings = append(ts.warnings, droppedTool(param, w.Type))
		}
	}
	return ts, ts.name(offers)
}

// droppedTool is the warning for a tool left out.
func droppedTool(param, typ string) string {
	if slices.Contains(builtinTools, typ) {
		return fmt.Sprintf("%s is a %s tool, which OpenAI runs on its side; this server runs no built-in tools, so it was not offered to the model", param, typ)
	}
	return fmt.Sprintf("%s has type %q, which this server does not know (it serves function, custom and namespace tools); it was not offered to the model", param, typ)
}

// readNamespace reads a namespace's inner tools.
func (ts *toolSet) readNamespace(param string, w *wireTool) ([]offer, error) {
	if w.Name == nil {
		return nil, invalid(param+".name", fmt.Sprintf("%s is a namespace without a name; give it the name its calls should carry", param))
	}
	if err := checkToolName(param+".name", *w.Name); err != nil {
		return nil, err
	}
	if len(w.Tools) == 0 {
		ts.warnings = append(ts.warnings, fmt.Sprintf("%s is the namespace %s with no tools; it offers nothing and was dropped", param, *w.Name))
		return nil, nil
	}
	var offers []offer
	for j, r := range w.Tools {
		ip := fmt.Sprintf("%s.tools[%d]", param, j)
		var iw wireTool
		if err := json.Unmarshal(r, &iw); err != nil {
			return nil, invalid(ip, fmt.Sprintf("%s must be {\"type\": \"function\", \"name\": ..., \"parameters\": {...}}", ip))
		}
		if iw.Type != "function" && iw.Type != "custom" {
			ts.warnings = append(ts.warnings, fmt.Sprintf("%s has type %q; a namespace holds function and custom tools, so it was not offered to the model", ip, iw.Type))
			continue
		}
		o, _, err := readTool(ip, *w.Name, &iw, r)
		if err != nil {
			return nil, err
		}
		if iw.Type == "custom" {
			ts.warnings = append(ts.warnings, customFormatWarning(ip, &iw)...)
		}
		offers = append(offers, o)
	}
	return offers, nil
}

// readTool reads a function or custom tool, and returns it with its echo.
func readTool(param, namespace string, w *wireTool, raw json.RawMessage) (offer, json.RawMessage, error) {
	if w.Type == "function" && w.Name == nil && len(w.Function) > 0 {
		return offer{}, nil, invalid(param+".name", fmt.Sprintf("%s nests the function under \"function\" as chat completions do; the Responses API takes it flat: {\"type\": \"function\", \"name\": ..., \"parameters\": {...}}", param))
	}
	if w.Name == nil || *w.Name == "" {
		return offer{}, nil, invalid(param+".name", fmt.Sprintf("%s has no name; give every %s tool a name", param, w.Type))
	}
	if err := checkToolName(param+".name", *w.Name); err != nil {
		return offer{}, nil, err
	}
	desc := ""
	if w.Description != nil {
		desc = *w.Description
	}
	o := offer{param: param, ref: toolRef{custom: w.Type == "custom", namespace: namespace, name: *w.Name}}
	if o.ref.custom {
		o.tool = chat.Tool{Description: desc, Parameters: customParameters(w.Format)}
		return o, compact(raw), nil
	}
	params := bytes.TrimSpace(w.Parameters)
	if string(params) == "null" {
		params = nil
	}
	if len(params) > 0 && params[0] != '{' {
		return offer{}, nil, invalid(param+".parameters", fmt.Sprintf("%s.parameters must be a JSON Schema object, got %s", param, jsonKind(params)))
	}
	o.tool = chat.Tool{Description: desc, Parameters: json.RawMessage(params)}
	echo, err := json.Marshal(responseTool{Type: "function", Name: *w.Name, Description: w.Description,
		Parameters: json.RawMessage(params), Strict: w.Strict != nil && *w.Strict})
	return o, echo, err
}

// checkToolName applies OpenAI's rule for tool and namespace names.
func checkToolName(param, name string) error {
	switch {
	case name == "":
		return invalid(param, fmt.Sprintf("Invalid '%s': empty string; give every tool a name", param))
	case len(name) > maxToolName:
		return &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: param, Code: "string_above_max_length",
			Message: fmt.Sprintf("Invalid '%s': string too long. Expected a string with maximum length %d, but got a string with length %d instead.", param, maxToolName, len(name))}
	case !toolNamePattern.MatchString(name):
		return invalid(param, fmt.Sprintf("Invalid '%s': %.80q does not match the pattern '^[a-zA-Z0-9_-]+$'; use only letters, digits, underscores and hyphens", param, name))
	}
	return nil
}

// name gives each offered tool the name the model sees: its own, unless another tool has it
// too, in which case namespaced ones are qualified with their namespace.
func (ts *toolSet) name(offers []offer) error {
	count := map[string]int{}
	for _, o := range offers {
		count[o.ref.name]++
	}
	seen := map[string]string{} // model name → the param that took it
	for _, o := range offers {
		name := o.ref.name
		if o.ref.namespace != "" && count[name] > 1 {
			name = o.ref.namespace + "__" + name
			if len(name) > maxToolName {
				return invalid(o.param+".name", fmt.Sprintf("%s (%s in namespace %s) shares its name with another tool, and %s is longer than %d characters; rename one of them",
					o.param, o.ref.name, o.ref.namespace, name, maxToolName))
			}
		}
		if prev, ok := seen[name]; ok {
			return invalid(o.param+".name", fmt.Sprintf("%s is named %s, like %s; tool names must be unique (within a namespace, and among top-level tools)", o.param, name, prev))
		}
		seen[name] = o.param
		o.tool.Name = name
		ts.tools = append(ts.tools, o.tool)
		ts.refs[name], ts.names[o.ref] = o.ref, name
	}
	return nil
}

// toResponseToolChoice reads `tool_choice` and returns the core's choice and its echo.
func toResponseToolChoice(raw json.RawMessage, ts *toolSet) (core.ToolChoice, json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return core.ToolChoice{Mode: core.ToolAuto}, json.RawMessage(`"auto"`), nil
	}
	var mode string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &mode); err != nil || (mode != core.ToolAuto && mode != core.ToolNone && mode != core.ToolRequired) {
			return core.ToolChoice{}, nil, invalid("tool_choice", fmt.Sprintf("tool_choice is %s; use auto, none, required or {\"type\": \"function\", \"name\": ...}", raw))
		}
		if mode == core.ToolRequired && len(ts.tools) == 0 {
			msg := "tool_choice is required but no tools were given; add tools or use tool_choice auto"
			if len(ts.dropped) > 0 {
				msg = fmt.Sprintf("tool_choice is required but the only tools given are built-in tools this server does not run (%v); add function tools or use tool_choice auto", ts.dropped)
			}
			return core.ToolChoice{}, nil, invalid("tool_choice", msg)
		}
		return core.ToolChoice{Mode: mode}, raw, nil
	}
	var obj struct {
		Type      string `json:"type"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return core.ToolChoice{}, nil, invalid("tool_choice", fmt.Sprintf("invalid type for 'tool_choice': expected a string or an object, got %s", jsonKind(raw)))
	}
	switch {
	case obj.Type == "function" || obj.Type == "custom":
	case obj.Type == "allowed_tools":
		return allowedTools(raw, ts)
	case slices.Contains(builtinTools, obj.Type) || slices.Contains(ts.dropped, obj.Type):
		return core.ToolChoice{}, nil, unsupported("tool_choice", fmt.Sprintf("tool_choice forces the built-in tool %s, which this server does not run (it runs function and custom tools that your code runs); use auto or name a function", obj.Type))
	default:
		return core.ToolChoice{}, nil, invalid("tool_choice.type", fmt.Sprintf("tool_choice.type is %q; use function or custom", obj.Type))
	}
	if obj.Name == "" {
		return core.ToolChoice{}, nil, invalid("tool_choice.name", fmt.Sprintf("tool_choice names no %s tool; send {\"type\": %q, \"name\": ...}", obj.Type, obj.Type))
	}
	name, ok := ts.chosen(obj.Type == "custom", obj.Namespace, obj.Name)
	if !ok {
		return core.ToolChoice{}, nil, invalid("tool_choice", fmt.Sprintf("tool_choice names the %s %q, which is not in tools; name one of the tools given", obj.Type, obj.Name))
	}
	return core.ToolChoice{Mode: core.ToolFunction, Name: name}, compact(raw), nil
}

// chosen finds the model's name for a tool_choice: the tool in the namespace given, else the
// top-level tool of that name, else the one namespaced tool with that inner name.
func (ts *toolSet) chosen(custom bool, namespace, name string) (string, bool) {
	if n, ok := ts.names[toolRef{custom, namespace, name}]; ok || namespace != "" {
		return n, ok
	}
	found := ""
	for r, n := range ts.names {
		if r.custom == custom && r.name == name {
			if found != "" {
				return "", false // ambiguous: the client must say which namespace
			}
			found = n
		}
	}
	return found, found != ""
}

// compact is raw without insignificant whitespace (raw as given when it cannot be compacted).
func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

// allowedTools serves tool_choice {"type": "allowed_tools", "mode": "auto"|"required", "tools":
// [...]}: the model is offered only the tools listed (a function or custom tool by name and
// optional namespace; a built-in tool listed is one this server dropped already), and mode
// says whether it must call one.
func allowedTools(raw json.RawMessage, ts *toolSet) (core.ToolChoice, json.RawMessage, error) {
	var obj struct {
		Mode  string `json:"mode"`
		Tools []struct {
			Type      string `json:"type"`
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return core.ToolChoice{}, nil, invalid("tool_choice", fmt.Sprintf("tool_choice allowed_tools is not of the form {\"type\": \"allowed_tools\", \"mode\": \"auto\", \"tools\": [...]}: %v", err))
	}
	mode := obj.Mode
	if mode != core.ToolAuto && mode != core.ToolRequired {
		return core.ToolChoice{}, nil, invalid("tool_choice.mode", fmt.Sprintf("tool_choice.mode is %q; use auto or required", obj.Mode))
	}
	keep := map[string]bool{}
	for i, t := range obj.Tools {
		if t.Type != "function" && t.Type != "custom" {
			continue // a built-in tool: not run here, already left out of tools
		}
		name, ok := ts.chosen(t.Type == "custom", t.Namespace, t.Name)
		if !ok {
			p := fmt.Sprintf("tool_choice.tools[%d]", i)
			return core.ToolChoice{}, nil, invalid(p, fmt.Sprintf("%s names the %s %q, which is not in tools; list only tools given", p, t.Type, t.Name))
		}
		keep[name] = true
	}
	ts.tools = slices.DeleteFunc(ts.tools, func(t chat.Tool) bool { return !keep[t.Name] })
	if mode == core.ToolRequired && len(ts.tools) == 0 {
		return core.ToolChoice{}, nil, invalid("tool_choice.tools", "tool_choice allowed_tools is required but lists none of the function or custom tools given; list one, or use mode auto")
	}
	return core.ToolChoice{Mode: mode}, compact(raw), nil
}
