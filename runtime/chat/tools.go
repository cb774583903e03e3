package chat

// Tools in the template environment: the request's tool definitions and the
// conversation's tool calls, checked and converted to the values HF's
// apply_chat_template hands a template.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/ardanlabs/jinja"
)

// ErrToolSchema is wrapped by the error CheckTools (and so Render) returns
// for a tool definition that cannot be rendered: an empty, malformed or
// duplicate name, or parameters that are not a JSON object schema.
var ErrToolSchema = errors.New("invalid tools")

// ErrToolArguments is wrapped by the error CheckMessages (and so Render)
// returns for an assistant tool call in the history whose arguments are not
// a JSON object. The message names the call, e.g.
// "messages[2].tool_calls[0].function.arguments is not valid JSON".
var ErrToolArguments = errors.New("invalid tool call arguments")

// toolName is the shape OpenAI accepts for function names; models were
// trained on such names, and they are safe to print in a prompt unquoted.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// CheckTools reports the first tool that cannot be rendered, as an error
// wrapping ErrToolSchema: a name that is empty, not 1 to 64 letters,
// digits, underscores or hyphens, or declared twice; or Parameters that are
// not a JSON object (nil and JSON null mean no parameters).
func CheckTools(tools []Tool) error {
	seen := make(map[string]bool, len(tools))
	for i, tool := range tools {
		switch {
		case tool.Name == "":
			return fmt.Errorf("%w: tools[%d]: name is empty; give every tool a name", ErrToolSchema, i)
		case !toolName.MatchString(tool.Name):
			return fmt.Errorf("%w: tool %q: name must be 1 to 64 letters, digits, underscores or hyphens", ErrToolSchema, tool.Name)
		case seen[tool.Name]:
			return fmt.Errorf("%w: tool %s is declared twice; tool names must be unique", ErrToolSchema, tool.Name)
		case !noParameters(tool.Parameters) && !isObject(tool.Parameters):
			return fmt.Errorf("%w: tool %s: parameters must be a JSON object schema", ErrToolSchema, tool.Name)
		}
		seen[tool.Name] = true
	}
	return nil
}

// CheckMessages reports the first assistant tool call whose arguments are
// not a JSON object, as an error wrapping ErrToolArguments. Empty arguments
// mean none ({}). Indexes are positions in msgs.
func CheckMessages(msgs []Message) error {
	for i, m := range msgs {
		for j, call := range m.ToolCalls {
			args := bytes.TrimSpace(call.Arguments)
			switch {
			case len(args) == 0:
			case !json.Valid(args):
				return fmt.Errorf("%w: messages[%d].tool_calls[%d].function.arguments is not valid JSON", ErrToolArguments, i, j)
			case args[0] != '{':
				return fmt.Errorf("%w: messages[%d].tool_calls[%d].function.arguments is not a JSON object", ErrToolArguments, i, j)
			}
		}
	}
	return nil
}

// reservedVars are the variables the server sets; a chat_template_kwarg of
// the same name would silently lose (or, worse, replace the conversation),
// so it is refused instead.
var reservedVars = []string{"messages", "tools", "bos_token", "eos_token", "add_generation_prompt"}

// checkKwargs refuses chat_template_kwargs named like a reserved variable.
func checkKwargs(kwargs map[string]any) error {
	for _, name := range reservedVars {
		if _, ok := kwargs[name]; ok {
			return fmt.Errorf("%w: chat_template_kwargs: %s is set by the server; remove it", ErrTemplate, name)
		}
	}
	return nil
}

// noParameters reports whether raw declares no parameters: nil, blank or
// JSON null.
func noParameters(raw json.RawMessage) bool {
	s := bytes.TrimSpace(raw)
	return len(s) == 0 || string(s) == "null"
}

// isObject reports whether raw is one valid JSON object.
func isObject(raw json.RawMessage) bool {
	s := bytes.TrimSpace(raw)
	return len(s) > 0 && s[0] == '{' && json.Valid(s)
}

// emptySchema is what a tool without parameters declares, as HF's
// get_json_schema writes it for a function without arguments.
const emptySchema = `{"type": "object", "properties": {}}`

// toolsValue is the tools variable: None without tools, else HF's list of
// {"type": "function", "function": {"name", "description", "parameters"}}
// with description left out when empty.
func toolsValue(tools []Tool) (jinja.Value, error) {
	if len(tools) == 0 {
		return jinja.None(), nil
	}
	list := make([]jinja.Value, len(tools))
	for i, tool := range tools {
		params := tool.Parameters
		if noParameters(params) {
			params = json.RawMessage(emptySchema)
		}
		schema, err := jsonValue(params)
		if err != nil {
			return jinja.None(), fmt.Errorf("%w: tool %s: parameters: %w", ErrToolSchema, tool.Name, err)
		}
		fn := jinja.NewDict()
		fn.AsDict().Set("name", jinja.NewString(tool.Name))
		if tool.Description != "" {
			fn.AsDict().Set("description", jinja.NewString(tool.Description))
		}
		fn.AsDict().Set("parameters", schema)
		v := jinja.NewDict()
		v.AsDict().Set("type", jinja.NewString("function"))
		v.AsDict().Set("function", fn)
		list[i] = v
	}
	return jinja.NewList(list), nil
}

// toolCallsValue is an assistant message's tool_calls: a list of
// {"id", "type": "function", "function": {"name", "arguments"}} with the
// arguments a dict, as HF passes them (templates that want text apply
// tojson).
func toolCallsValue(calls []ToolCall) (jinja.Value, error) {
	list := make([]jinja.Value, len(calls))
	for i, call := range calls {
		args, err := argumentsValue(call.Arguments)
		if err != nil {
			return jinja.None(), fmt.Errorf("%w: tool call %s: %w", ErrToolArguments, call.Name, err)
		}
		fn := jinja.NewDict()
		fn.AsDict().Set("name", jinja.NewString(call.Name))
		fn.AsDict().Set("arguments", args)
		v := jinja.NewDict()
		v.AsDict().Set("id", jinja.NewString(call.ID))
		v.AsDict().Set("type", jinja.NewString("function"))
		v.AsDict().Set("function", fn)
		list[i] = v
	}
	return jinja.NewList(list), nil
}

// argumentsValue parses a call's arguments; empty means {}.
func argumentsValue(raw json.RawMessage) (jinja.Value, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return jinja.NewDict(), nil
	}
	return jsonValue(raw)
}

// jsonValue parses one JSON value into a template value. Unlike
// jinja.FromGoValue (which sorts map keys) it keeps the order of object
// keys, as Python's json.loads does: tojson in the template then writes a
// schema the way the client wrote it, the way HF renders it.
func jsonValue(raw json.RawMessage) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeJSON(dec)
	if err != nil {
		return jinja.None(), err
	}
	if _, err := dec.Token(); err != io.EOF {
		return jinja.None(), errors.New("data after the JSON value")
	}
	return v, nil
}

// decodeJSON reads the next value from dec.
func decodeJSON(dec *json.Decoder) (jinja.Value, error) {
	tok, err := dec.Token()
	if err != nil {
		return jinja.None(), err
	}
	switch tok := tok.(type) {
	case json.Delim:
		if tok == '[' {
			items := []jinja.Value{}
			for dec.More() {
				item, err := decodeJSON(dec)
				if err != nil {
					return jinja.None(), err
				}
				items = append(items, item)
			}
			_, err := dec.Token() // ]
			return jinja.NewList(items), err
		}
		v := jinja.NewDict()
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return jinja.None(), err
			}
			item, err := decodeJSON(dec)
			if err != nil {
				return jinja.None(), err
			}
			v.AsDict().Set(key.(string), item) // the decoder only yields string keys
		}
		_, err := dec.Token() // }
		return v, err
	case json.Number:
		// FromGoValue keeps integers integers (json.dumps writes 1, not 1.0).
		return jinja.FromGoValue(tok), nil
	case string:
		return jinja.NewString(tok), nil
	case bool:
		return jinja.NewBool(tok), nil
	default: // nil: JSON null
		return jinja.None(), nil
	}
}

// pythonJSON writes valid JSON compactly with Python json.dumps's
// separators (", " and ": "), the spelling models saw in training data
// rendered by HF's tojson. Key order, numbers and string escapes stay as
// the client wrote them.
func pythonJSON(raw json.RawMessage) string {
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return string(raw) // callers pass checked JSON
	}
	var b strings.Builder
	inString, escaped := false, false
	for _, c := range compact.Bytes() {
		b.WriteByte(c)
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == ',' || c == ':'):
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// jsonString quotes s as a JSON string without escaping <, > and & (as
// Python's json.dumps does not).
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}
