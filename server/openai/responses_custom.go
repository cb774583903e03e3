package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Custom tools take free-form text. The model is offered a function of one string, "input",
// since that is what every tool-call syntax of a chat template can carry; the string is the
// custom_tool_call's input, and a custom_tool_call sent back renders as that function call.

// customInputKey is the one argument of the function a custom tool is offered as.
const customInputKey = "input"

// customFormat is a custom tool's format: {type: "text"} or {type: "grammar", syntax, definition}.
type customFormat struct {
	Type       string `json:"type"`
	Syntax     string `json:"syntax"`
	Definition string `json:"definition"`
}

func readCustomFormat(raw json.RawMessage) (customFormat, bool) {
	var f customFormat
	if b := bytes.TrimSpace(raw); len(b) == 0 || string(b) == "null" {
		return customFormat{Type: "text"}, true
	}
	err := json.Unmarshal(raw, &f)
	return f, err == nil
}

// customParameters is the schema of the function a custom tool is offered as. A grammar is
// shown to the model in the description of its input (it is not enforced).
func customParameters(format json.RawMessage) json.RawMessage {
	desc := "The tool's input, as free-form text."
	if f, ok := readCustomFormat(format); ok && f.Type == "grammar" && f.Definition != "" {
		desc = fmt.Sprintf("The tool's input, as free-form text following this %s grammar:\n%s", f.Syntax, f.Definition)
	}
	schema, _ := json.Marshal(map[string]any{
		"type":       "object",
		"properties": map[string]any{customInputKey: map[string]any{"type": "string", "description": desc}},
		"required":   []string{customInputKey},
	})
	return schema
}

// customFormatWarning says when a custom tool's format is not enforced.
func customFormatWarning(param string, w *wireTool) []string {
	f, ok := readCustomFormat(w.Format)
	switch {
	case !ok:
		return []string{fmt.Sprintf("%s.format is not {\"type\": \"text\"} or {\"type\": \"grammar\", ...}; it was ignored and the input is free text", param)}
	case f.Type == "" || f.Type == "text":
		return nil
	case f.Type == "grammar":
		return []string{fmt.Sprintf("%s.format is a %s grammar; this server shows it to the model but does not enforce it, so check the input", param, f.Syntax)}
	default:
		return []string{fmt.Sprintf("%s.format.type %q is not one this server knows; it was ignored and the input is free text", param, f.Type)}
	}
}

// customInput is the input a custom tool call's arguments carry: the "input" string, else
// the one string argument the model gave, else the arguments as written.
func customInput(args string) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &obj) != nil {
		return args
	}
	pick := func(raw json.RawMessage) (string, bool) {
		var s string
		return s, json.Unmarshal(raw, &s) == nil
	}
	if s, ok := pick(obj[customInputKey]); ok {
		return s
	}
	if len(obj) == 1 {
		for _, v := range obj {
			if s, ok := pick(v); ok {
				return s
			}
		}
	}
	return args
}

// customArguments is a custom tool's input as the arguments of the function it is offered as.
func customArguments(input string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{customInputKey: input})
	return b
}
