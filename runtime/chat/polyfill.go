package chat

// The tool polyfill: templates that do not render tools themselves (and the
// fallback template) still get the request's tools, calls and results, as
// plain messages every template renders. The format is the one
// GenericToolParser reads back from the reply.

import (
	"errors"
	"strings"
)

// Polyfill wording. The reply format is spelled out with placeholders, not
// an example call, so that small models do not copy an example's name.
const (
	toolsIntro  = "You can call these functions:\n"
	toolsFormat = `To call functions, reply with only a JSON object {"name": <function name>, "arguments": <arguments object>}, ` +
		"or a JSON array of such objects to call several. The results come back in a user message."
	resultPrefix = "Result of tool call"
)

// renderPolyfill renders msgs and opts.Tools through a template without
// native tool support: the tools become an instruction in the system
// message, calls become the JSON the instruction asks for and results
// become user turns. A template that refuses the system message we added
// (raise_exception), or drops the system message that carries it, is tried
// again with the instruction at the start of the first user message.
func (t *Template) renderPolyfill(msgs []Message, opts Options) (string, error) {
	msgs = polyfillMessages(msgs)
	tools := opts.Tools
	opts.Tools = nil // the template does not read them; they travel in a message
	if len(tools) == 0 {
		return t.render(msgs, opts)
	}
	instruction := toolInstruction(tools)
	withSystem, added := addToSystem(msgs, instruction)
	out, err := t.render(withSystem, opts)
	if err != nil && added && errors.Is(err, ErrTemplate) || err == nil && !strings.Contains(out, toolsIntro) {
		// Refused, or dropped (a template without a system role): the first user turn carries it.
		return t.render(addToFirstUser(msgs, instruction), opts)
	}
	return out, err
}

// toolInstruction lists the tools, one JSON object per line, and says how
// to call them.
func toolInstruction(tools []Tool) string {
	var b strings.Builder
	b.WriteString(toolsIntro)
	for _, tool := range tools {
		b.WriteString(`{"name": `)
		b.WriteString(jsonString(tool.Name))
		if tool.Description != "" {
			b.WriteString(`, "description": `)
			b.WriteString(jsonString(tool.Description))
		}
		b.WriteString(`, "parameters": `)
		if noParameters(tool.Parameters) {
			b.WriteString(emptySchema)
		} else {
			b.WriteString(pythonJSON(tool.Parameters))
		}
		b.WriteString("}\n")
	}
	b.WriteString("\n")
	b.WriteString(toolsFormat)
	return b.String()
}

// polyfillMessages rewrites the tool parts of a conversation: an assistant
// turn with calls gets the calls' JSON as its content, and each run of tool
// results becomes one user turn, so that templates which require
// alternating roles (or know no tool role) still render it.
//
// An assistant turn's text beside its calls is dropped: the instruction
// asks for only JSON, and a history that shows text before the JSON would
// teach the model to write replies the generic parser does not take as
// calls.
func polyfillMessages(msgs []Message) []Message {
	out := make([]Message, 0, len(msgs))
	names := map[string]string{} // call ID → function name, for the results
	results := false             // the last message in out holds tool results
	for _, m := range msgs {
		switch {
		case m.Role == "assistant" && len(m.ToolCalls) > 0:
			for _, call := range m.ToolCalls {
				if call.ID != "" {
					names[call.ID] = call.Name
				}
			}
			m.Content, m.ToolCalls = callsJSON(m.ToolCalls), nil
			out = append(out, m)
			results = false
		case m.Role == "tool":
			text := resultText(m, names)
			if results {
				out[len(out)-1].Content += "\n\n" + text
				continue
			}
			out = append(out, Message{Role: "user", Content: text})
			results = true
		default:
			out = append(out, m)
			results = false
		}
	}
	return out
}

// callsJSON is the reply the instruction asks for: one call as an object,
// several as an array.
func callsJSON(calls []ToolCall) string {
	parts := make([]string, len(calls))
	for i, call := range calls {
		args := "{}"
		if !noParameters(call.Arguments) {
			args = pythonJSON(call.Arguments)
		}
		parts[i] = `{"name": ` + jsonString(call.Name) + `, "arguments": ` + args + "}"
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// resultText is a tool result as user text: "Result of tool call <id>
// (<name>):" and the content on the next line. The name is the message's,
// else the name of the earlier call with that ID; either part is left out
// when unknown.
func resultText(m Message, names map[string]string) string {
	name := m.Name
	if name == "" {
		name = names[m.ToolCallID]
	}
	head := resultPrefix
	if m.ToolCallID != "" {
		head += " " + m.ToolCallID
	}
	if name != "" {
		head += " (" + name + ")"
	}
	return head + ":\n" + m.Content
}

// addToSystem merges instruction into the first message when it is a
// system message (after its content), or prepends a system message; added
// reports the latter.
func addToSystem(msgs []Message, instruction string) (out []Message, added bool) {
	if len(msgs) > 0 && msgs[0].Role == "system" {
		out = append([]Message(nil), msgs...)
		out[0].Content = JoinText(out[0].Content, instruction)
		return out, false
	}
	return append([]Message{{Role: "system", Content: instruction}}, msgs...), true
}

// addToFirstUser puts instruction before the first user message's content,
// or in a user message of its own at the start when there is none.
func addToFirstUser(msgs []Message, instruction string) []Message {
	for i, m := range msgs {
		if m.Role == "user" {
			out := append([]Message(nil), msgs...)
			out[i].Content = JoinText(instruction, m.Content)
			return out
		}
	}
	return append([]Message{{Role: "user", Content: instruction}}, msgs...)
}

// JoinText joins two texts with a blank line, or returns the non-empty one.
func JoinText(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}
