package chat

import (
	"fmt"
	"strings"
)

// HermesToolParser reads the Hermes/Qwen syntax:
// <tool_call>{"name": ..., "arguments": {...}}</tool_call>, any number of
// them, with content around. It tolerates a missing opening tag (a JSON
// call right before </tool_call>), a missing closing tag at the end of the
// reply, and several calls (or an array) inside one tag. Without either
// tag it falls back to GenericToolParser (which also takes a call wrapped
// in a code fence or in <tools>, as Qwen2.5-Coder writes it).
type HermesToolParser struct{}

// Parse implements ToolParser.
func (HermesToolParser) Parse(text string) (string, []ToolCall, string, error) {
	if !strings.Contains(text, hermesOpen) && !strings.Contains(text, hermesClose) {
		return GenericToolParser{}.Parse(text)
	}
	var s spans
	rest := text
	for rest != "" {
		open, end := strings.Index(rest, hermesOpen), strings.Index(rest, hermesClose)
		switch {
		case open < 0 && end < 0:
			s.text(rest)
			rest = ""
		case end >= 0 && (open < 0 || end < open):
			// A closing tag without its opening tag: the call is the JSON
			// object that ends right before it.
			hermesUnopened(&s, rest[:end])
			rest = rest[end+len(hermesClose):]
		default:
			s.text(rest[:open])
			body := rest[open+len(hermesOpen):]
			raw := rest[open:]
			rest = ""
			if e := strings.Index(body, hermesClose); e >= 0 {
				raw = raw[:len(hermesOpen)+e+len(hermesClose)]
				body, rest = body[:e], body[e+len(hermesClose):]
			}
			calls, tail, err := decodeCalls(body, false)
			if err == nil && strings.TrimSpace(tail) != "" {
				err = fmt.Errorf("%w: text after the call inside %s: %q", ErrToolCall, hermesOpen, Clip(strings.TrimSpace(tail), 80))
			}
			if err != nil {
				s.suspect(raw, err)
				continue
			}
			s.calls = append(s.calls, calls...)
		}
	}
	return s.result(text)
}

// hermesUnopened handles the text before a closing tag that had no
// opening tag: content, then the call.
func hermesUnopened(s *spans, before string) {
	for i := strings.IndexByte(before, '{'); i >= 0; {
		calls, tail, err := decodeCalls(before[i:], false)
		if err == nil && strings.TrimSpace(tail) == "" {
			s.text(before[:i])
			s.calls = append(s.calls, calls...)
			return
		}
		j := strings.IndexByte(before[i+1:], '{')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	s.suspect(before+hermesClose, fmt.Errorf("%w: %s without a call before it", ErrToolCall, hermesClose))
}

// Llama3ToolParser reads Llama 3.x calls: a JSON object
// {"name": ..., "parameters": {...}} (or "arguments"), as the whole reply,
// after <|python_tag|>, or on a line of its own after some text (Llama 3.1
// 8B may announce the call first: "Let me check.\n\n{...}"). Several
// calls may follow one another, separated by ';' or whitespace. Text after
// the calls is content.
type Llama3ToolParser struct{}

// Parse implements ToolParser.
func (Llama3ToolParser) Parse(text string) (string, []ToolCall, string, error) {
	var s spans
	tag, line := strings.Index(text, pythonTag), lineStartCall(text)
	t := strings.TrimLeft(text, " \t\r\n")
	switch {
	case callStart.MatchString(t):
		return llama3JSON(&s, text, text)
	case tag >= 0 && (line < 0 || tag < line):
		s.text(text[:tag])
		body := text[tag+len(pythonTag):]
		// Later python tags between calls are separators.
		calls, tail, err := decodeCalls(strings.ReplaceAll(body, pythonTag, " "), false)
		if err != nil {
			s.suspect(text[tag:], err)
			return s.result(text)
		}
		s.calls = calls
		s.text(tail)
		return s.result(text)
	case line >= 0:
		s.text(text[:line])
		return llama3JSON(&s, text, text[line:])
	}
	return GenericToolParser{}.Parse(text) // fenced or wrapped JSON, or plain content
}

// llama3JSON parses body, the end of text that opens like a JSON call,
// into s. Without a tag, only arguments mark JSON as a call; JSON that
// does not parse and has none is content.
func llama3JSON(s *spans, text, body string) (string, []ToolCall, string, error) {
	calls, tail, err := decodeCalls(strings.ReplaceAll(body, pythonTag, " "), true)
	switch {
	case err == nil:
		s.calls = calls
		s.text(tail)
	case looksLikeCall(body):
		s.suspect(body, err)
	default:
		return text, nil, "", nil // JSON the model wrote as content
	}
	return s.result(text)
}

// lineStartCall returns where the first JSON call that starts a line after
// some text begins in text, or -1. Spaces and tabs may indent it.
func lineStartCall(text string) int {
	for i := strings.IndexByte(text, '{'); i >= 0; {
		before := strings.TrimRight(text[:i], " \t")
		if strings.HasSuffix(before, "\n") && strings.TrimSpace(before) != "" && callStart.MatchString(text[i:]) {
			return i
		}
		j := strings.IndexByte(text[i+1:], '{')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return -1
}

// MistralToolParser reads Mistral calls: [TOOL_CALLS] followed by a JSON
// array of {"name": ..., "arguments": {...}} objects, or (newer templates)
// by name[ARGS]{...}, optionally name[CALL_ID]id[ARGS]{...}, repeated with
// another [TOOL_CALLS] for each call. Text before the marker and after the
// calls is content. Without the marker it falls back to GenericToolParser.
type MistralToolParser struct{}

// Parse implements ToolParser.
func (MistralToolParser) Parse(text string) (string, []ToolCall, string, error) {
	i := strings.Index(text, mistralCalls)
	if i < 0 {
		return GenericToolParser{}.Parse(text)
	}
	var s spans
	s.text(text[:i])
	calls, tail, err := mistralCallList(text[i:])
	if err != nil {
		s.suspect(text[i:], err)
	} else {
		s.calls = calls
		s.text(tail)
	}
	return s.result(text)
}

// mistralCallList parses calls from s, which starts with [TOOL_CALLS],
// and returns the text after them.
func mistralCallList(s string) ([]ToolCall, string, error) {
	var calls []ToolCall
	for strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), mistralCalls) {
		s = strings.TrimLeft(strings.TrimLeft(s, " \t\r\n")[len(mistralCalls):], " \t\r\n")
		if strings.HasPrefix(s, "[") || strings.HasPrefix(s, "{") {
			got, rest, err := decodeCalls(s, false)
			if err != nil {
				return nil, "", err
			}
			calls, s = append(calls, got...), rest
			continue
		}
		a := strings.Index(s, mistralArgs)
		if a < 0 {
			return nil, "", fmt.Errorf("%w: %s without %s or a JSON list", ErrToolCall, mistralCalls, mistralArgs)
		}
		name := s[:a]
		if c := strings.Index(name, mistralCallID); c >= 0 {
			name = name[:c] // the model's own id; ours replaces it
		}
		name = strings.TrimSpace(name)
		if name == "" || strings.ContainsAny(name, " \t\r\n{}[]\"") {
			return nil, "", fmt.Errorf("%w: bad function name %q", ErrToolCall, Clip(name, 80))
		}
		raw, n, err := decodeValue(strings.TrimLeft(s[a+len(mistralArgs):], " \t\r\n"))
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", name, err)
		}
		args, err := normalizeArguments(raw)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", name, err)
		}
		calls = append(calls, ToolCall{ID: newCallID(), Name: name, Arguments: args})
		s = strings.TrimLeft(s[a+len(mistralArgs):], " \t\r\n")[n:]
	}
	return calls, s, nil
}
