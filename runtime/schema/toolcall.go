package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Tool is what ToolCall needs of a tool: its name and the JSON Schema of its arguments (nil, empty
// or null for a tool without parameters).
type Tool struct {
	Name       string
	Parameters json.RawMessage
}

// ToolCall builds the JSON Schema that forces the model to call a tool, in the generic shape the
// server parses:
//
//	{"name": "<tool>", "arguments": {...}}
//
// For one tool that is an object with "name" (a const) and "arguments" (the tool's parameters
// schema, or {"type":"object"} when it has none), both required and nothing else allowed, with
// "name" first so that the grammar makes the model commit to a tool before it writes arguments.
// Several tools give an anyOf of such objects; name, when not empty, keeps only that tool. With
// parallel the schema is an array of at least one call.
//
// Each tool's parameters are vetted like Check, and its local $refs ("#", "#/$defs/x") are
// rewritten to the place the parameters take in the result (for example
// "#/anyOf/1/properties/arguments/$defs/x"), so recursive and shared definitions keep working.
// The result passes Check; the caller sends it as the request's schema.
func ToolCall(tools []Tool, name string, parallel bool) (json.RawMessage, error) {
	s, _, err := ToolCallGrammar(tools, name, parallel)
	return s, err
}

// ToolCallGrammar is ToolCall that also says what of the chosen tools' parameters the grammar
// cannot express: those keywords are left out or loosened as Grammar does, so that the result
// compiles, and each Relaxation names its tool. Check the arguments of the calls the model makes
// with Validate against the tool's own parameters.
func ToolCallGrammar(tools []Tool, name string, parallel bool) (json.RawMessage, []Relaxation, error) {
	var buf bytes.Buffer
	relaxed, err := writeCalls(newEncoder(&buf), tools, name, parallel, "")
	if err != nil {
		return nil, nil, err
	}
	out := json.RawMessage(buf.Bytes())
	if err := Check(out); err != nil {
		return nil, nil, fmt.Errorf("force a tool call: the schema built from the tools is too large or complex, send fewer tools or simpler parameters: %w", err)
	}
	return out, relaxed, nil
}

// FormatOrCall is the schema of a reply that is either JSON matching format (a response format)
// or a call to one of tools in ToolCall's shape: {"anyOf":[format, calls]}, each with its $refs
// moved to its place, relaxed for the grammar as Grammar and ToolCallGrammar do. It serves a
// response format beside tool_choice auto: the model may still call a tool. The relaxations of
// the format have no Tool.
func FormatOrCall(format json.RawMessage, tools []Tool, parallel bool) (json.RawMessage, []Relaxation, error) {
	doc, relaxed, edits, err := checkEdits(format)
	if err != nil {
		return nil, nil, err
	}
	apply(edits)
	var buf bytes.Buffer
	enc := newEncoder(&buf)
	buf.WriteString(`{"anyOf":[`)
	enc.rewrite = func(ref string) string { return "#/anyOf/0" + ref[1:] }
	enc.value(doc.root)
	enc.rewrite = nil
	buf.WriteByte(',')
	calls, err := writeCalls(enc, tools, "", parallel, "/anyOf/1")
	if err != nil {
		return nil, nil, err
	}
	buf.WriteString(`]}`)
	out := json.RawMessage(buf.Bytes())
	if err := Check(out); err != nil {
		return nil, nil, fmt.Errorf("combine the response format with the tools: the schema is too large or complex, send fewer tools or a simpler format: %w", err)
	}
	return out, append(relaxed, calls...), nil
}

// writeCalls writes the schema of a call to one of tools (name, when not empty, keeps only that
// one) at the JSON pointer base of the document enc writes.
func writeCalls(enc *encoder, tools []Tool, name string, parallel bool, base string) ([]Relaxation, error) {
	buf := enc.buf
	if len(tools) == 0 {
		return nil, &Error{Reason: "a tool call was required but the request has no tools; send tools or let the model answer freely (tool_choice auto or none)"}
	}
	seen := map[string]bool{}
	for _, t := range tools {
		if t.Name == "" {
			return nil, &Error{Reason: "a tool has no name; give every tool a name"}
		}
		if seen[t.Name] {
			return nil, &Error{Tool: t.Name, Reason: "two tools have this name; give each tool its own name"}
		}
		seen[t.Name] = true
	}
	chosen := tools
	if name != "" {
		i := indexOf(tools, name)
		if i < 0 {
			return nil, &Error{Tool: name, Reason: fmt.Sprintf("the requested tool is not among the request's tools (%s); name one of them", toolNames(tools))}
		}
		chosen = tools[i : i+1]
	}

	if parallel {
		buf.WriteString(`{"type":"array","items":`)
		base += "/items"
	}
	if len(chosen) > 1 {
		buf.WriteString(`{"anyOf":[`)
	}
	var relaxed []Relaxation
	for i, t := range chosen {
		if i > 0 {
			buf.WriteByte(',')
		}
		at := base
		if len(chosen) > 1 {
			at += "/anyOf/" + strconv.Itoa(i)
		}
		r, err := writeCall(enc, t, at+"/properties/arguments")
		if err != nil {
			return nil, err
		}
		relaxed = append(relaxed, r...)
	}
	if len(chosen) > 1 {
		buf.WriteString(`]}`)
	}
	if parallel {
		buf.WriteString(`,"minItems":1}`)
	}
	return relaxed, nil
}

// writeCall writes one call object, its parameters relaxed for the grammar; at is the JSON
// pointer its arguments schema will have.
func writeCall(enc *encoder, t Tool, at string) ([]Relaxation, error) {
	params := bytes.TrimSpace(t.Parameters)
	if len(params) == 0 || string(params) == "null" {
		params = []byte(`{"type":"object"}`)
	}
	doc, relaxed, edits, err := checkEdits(params)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Tool = t.Name
		}
		return nil, err
	}
	if doc.root.kind != kindObject {
		return nil, &Error{Tool: t.Name, Path: "#", Reason: "the parameters schema must be an object, like {\"type\":\"object\",\"properties\":{...}}"}
	}
	enc.buf.WriteString(`{"type":"object","properties":{"name":{"const":`)
	enc.string(t.Name)
	enc.buf.WriteString(`},"arguments":`)
	// check accepted only "#" and "#/..." refs, so every ref moves by prefixing the new place.
	apply(edits) // after the checks: the paths in relaxed are the client's
	enc.rewrite = func(ref string) string { return "#" + at + ref[1:] }
	enc.value(doc.root)
	enc.rewrite = nil
	enc.buf.WriteString(`},"required":["name","arguments"],"additionalProperties":false}`)
	for i := range relaxed {
		relaxed[i].Tool = t.Name
	}
	return relaxed, nil
}

func indexOf(tools []Tool, name string) int {
	for i, t := range tools {
		if t.Name == name {
			return i
		}
	}
	return -1
}

// toolNames lists tool names for a message, cut short when there are many.
func toolNames(tools []Tool) string {
	const most = 10
	var names []string
	for i, t := range tools {
		if i == most {
			names = append(names, fmt.Sprintf("and %d more", len(tools)-most))
			break
		}
		names = append(names, strconv.Quote(t.Name))
	}
	return strings.Join(names, ", ")
}
