package chat

// Tool-call parsing: a finished reply from the model is split into content
// and tool calls. Models write calls in their family's own syntax; the
// parser is chosen from the chat template (ToolParserFor), the way
// llama.cpp's server and Ollama choose theirs.

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/superfluid/superfluid/runtime/llm"
)

// ErrToolCall is wrapped by the error a ToolParser returns for text that
// looks like a tool call but does not parse.
var ErrToolCall = errors.New("tool call")

// ToolCall is one function call the model made.
type ToolCall = llm.ToolCall

// ToolParser splits a finished reply into content and tool calls.
type ToolParser interface {
	// Parse splits a finished reply into content and tool calls. Calls
	// come back in the order the model wrote them.
	//
	// When no call is found and nothing looks like one, content is text
	// unchanged. When calls are found, content is the text outside them
	// with surrounding whitespace trimmed.
	//
	// suspect reports text that looks like a call but did not parse; it
	// is non-empty exactly when err is non-nil (err wraps ErrToolCall and
	// says why). Suspect text is never dropped: it stays in content, where
	// it was, and the caller must say so in the reply (and keep a
	// warning). Calls that did parse are still returned beside it.
	Parse(text string) (content string, calls []ToolCall, suspect string, err error)
}

// Template markers that choose a parser.
const (
	hermesOpen    = "<tool_call>"
	hermesClose   = "</tool_call>"
	pythonTag     = "<|python_tag|>"
	mistralCalls  = "[TOOL_CALLS]"
	mistralArgs   = "[ARGS]"
	mistralCallID = "[CALL_ID]"
)

// ToolParserFor chooses the tool-call parser for a model from its chat
// template source: <tool_call> means Hermes/Qwen, [TOOL_CALLS] Mistral,
// <|python_tag|> or the ipython role Llama 3; any other template (or none)
// gets the generic JSON parser.
func ToolParserFor(templateSource string) ToolParser {
	switch {
	case strings.Contains(templateSource, hermesOpen):
		return HermesToolParser{}
	case strings.Contains(templateSource, mistralCalls):
		return MistralToolParser{}
	case strings.Contains(templateSource, pythonTag), strings.Contains(templateSource, "ipython"):
		return Llama3ToolParser{}
	default:
		return GenericToolParser{}
	}
}

// GenericToolParser takes a reply that is exactly a JSON object, or an
// array of objects, each with a name and arguments (or parameters), as
// calls. The JSON may be wrapped in one Markdown code fence, and in one of
// the tags models put around calls when they do not follow their template
// (wrapperTags: Qwen2.5-Coder writes <tools>, Hermes <function_call>).
// It must open like a call (callStart), the way the streaming form decides
// early. Anything else is content. It is the fallback for templates
// without a known tool-call syntax, and the other parsers use it when
// their markers are absent.
type GenericToolParser struct{}

// Parse implements ToolParser.
func (GenericToolParser) Parse(text string) (string, []ToolCall, string, error) {
	body := unwrapTag(unfence(strings.TrimSpace(text)))
	if !callStart.MatchString(body) {
		return text, nil, "", nil
	}
	calls, rest, err := decodeCalls(body, true)
	if err == nil && strings.TrimSpace(rest) == "" {
		return "", calls, "", nil
	}
	if !looksLikeCall(body) {
		return text, nil, "", nil
	}
	if err == nil {
		err = fmt.Errorf("%w: text after the call: %q", ErrToolCall, Clip(strings.TrimSpace(rest), 80))
	}
	return text, nil, strings.TrimSpace(text), err
}

// unfence returns the body of s when s is one Markdown code fence
// (```json ... ```), else s.
func unfence(s string) string {
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return s
	}
	inner := s[3 : len(s)-3]
	nl := strings.IndexByte(inner, '\n')
	if nl < 0 || strings.TrimSpace(inner[:nl]) != "" && !isWord(strings.TrimSpace(inner[:nl])) {
		return s
	}
	return strings.TrimSpace(inner[nl+1:])
}

// wrapperTags are the tags models were seen to wrap a JSON call in instead
// of their own syntax (the list llama.cpp's Hermes parser accepts).
var wrapperTags = []string{"tool_call", "function_call", "tools", "tool", "response", "json", "JSON", "xml"}

// unwrapTag returns the body of s when s is one <tag>...</tag> of
// wrapperTags, else s.
func unwrapTag(s string) string {
	for _, tag := range wrapperTags {
		open, close := "<"+tag+">", "</"+tag+">"
		if strings.HasPrefix(s, open) && strings.HasSuffix(s, close) && len(s) >= len(open)+len(close) {
			return strings.TrimSpace(s[len(open) : len(s)-len(close)])
		}
	}
	return s
}

func isWord(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// callStart matches the opening of a JSON call object (or an array of
// them): its first key names the function or holds the arguments (Hermes 2
// Pro writes "arguments" first), or it is "type": "function" (Llama 3.2,
// OpenAI's shape).
var callStart = regexp.MustCompile(`^\s*(\[\s*)?\{\s*("(name|function|tool_name|arguments|parameters)"\s*:|"type"\s*:\s*"function"\s*,)`)

// callOpenings are the shortest texts callStart matches, without
// whitespace. A stream holds a reply that opens like a prefix of one of
// them until it knows.
var callOpenings = func() []string {
	var o []string
	for _, open := range []string{"{", "[{"} {
		for _, key := range []string{"name", "function", "tool_name", "arguments", "parameters"} {
			o = append(o, open+`"`+key+`":`)
		}
		o = append(o, open+`"type":"function",`)
	}
	return o
}()

// looksLikeCall reports whether s opens like a JSON call object and
// mentions arguments (or the args and params models write by mistake):
// text a model meant as a call.
func looksLikeCall(s string) bool {
	if !callStart.MatchString(s) {
		return false
	}
	for _, key := range []string{`"arguments"`, `"parameters"`, `"args"`, `"params"`} {
		if strings.Contains(s, key) {
			return true
		}
	}
	return false
}

// decodeCalls decodes the JSON values at the start of s (after leading
// whitespace) as calls: objects, or arrays of objects, one after another,
// optionally separated by ';' or ','. It stops at the first text that does
// not start like a JSON value and returns it as rest. It fails when a value
// does not decode or is not a call. strict requires an arguments (or
// parameters) key, where nothing else (such as a tag) marks the JSON as a
// call.
func decodeCalls(s string, strict bool) (calls []ToolCall, rest string, err error) {
	rest = s
	for {
		trimmed := strings.TrimLeft(rest, " \t\r\n")
		if len(calls) > 0 {
			trimmed = strings.TrimLeft(strings.TrimPrefix(strings.TrimPrefix(trimmed, ";"), ","), " \t\r\n")
		}
		if !strings.HasPrefix(trimmed, "{") && !strings.HasPrefix(trimmed, "[") {
			if len(calls) == 0 {
				return nil, s, fmt.Errorf("%w: no JSON object", ErrToolCall)
			}
			return calls, rest, nil
		}
		raw, n, derr := decodeValue(trimmed)
		if derr != nil {
			return nil, s, derr
		}
		got, cerr := callsFromValue(raw, strict)
		if cerr != nil {
			return nil, s, cerr
		}
		calls = append(calls, got...)
		rest = trimmed[n:]
	}
}

// decodeValue decodes the one JSON value at the start of s and returns it
// with the number of bytes it took.
func decodeValue(s string) (json.RawMessage, int, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, 0, fmt.Errorf("%w: unfinished JSON", ErrToolCall)
		}
		return nil, 0, fmt.Errorf("%w: invalid JSON: %v", ErrToolCall, err)
	}
	return raw, int(dec.InputOffset()), nil
}

// callsFromValue converts a JSON object, or an array of objects, to calls.
func callsFromValue(raw json.RawMessage, strict bool) ([]ToolCall, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '[' {
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrToolCall, err)
		}
		if len(items) == 0 {
			return nil, fmt.Errorf("%w: empty list of calls", ErrToolCall)
		}
		calls := make([]ToolCall, 0, len(items))
		for i, it := range items {
			c, err := callFromObject(it, strict)
			if err != nil {
				return nil, fmt.Errorf("call %d: %w", i+1, err)
			}
			calls = append(calls, c)
		}
		return calls, nil
	}
	c, err := callFromObject(raw, strict)
	if err != nil {
		return nil, err
	}
	return []ToolCall{c}, nil
}

// callFromObject converts one call object: {"name": ..., "arguments":
// {...}} or "parameters" for arguments, or OpenAI's {"type": "function",
// "function": {...}} wrapping. Without strict, absent arguments mean {}.
func callFromObject(raw json.RawMessage, strict bool) (ToolCall, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return ToolCall{}, fmt.Errorf("%w: not a JSON object", ErrToolCall)
	}
	if fn, ok := obj["function"]; ok && bytes.HasPrefix(bytes.TrimSpace(fn), []byte("{")) {
		return callFromObject(fn, strict)
	}
	var name string
	if err := json.Unmarshal(obj["name"], &name); err != nil || strings.TrimSpace(name) == "" {
		return ToolCall{}, fmt.Errorf("%w: no function name", ErrToolCall)
	}
	args, ok := obj["arguments"]
	if !ok {
		args, ok = obj["parameters"]
	}
	if !ok && strict {
		return ToolCall{}, fmt.Errorf("%w: %s: no arguments", ErrToolCall, name)
	}
	norm, err := normalizeArguments(args)
	if err != nil {
		return ToolCall{}, fmt.Errorf("%s: %w", name, err)
	}
	return ToolCall{ID: newCallID(), Name: strings.TrimSpace(name), Arguments: norm}, nil
}

// normalizeArguments returns args as a compact JSON object: absent or null
// becomes {}, a string holding a JSON object is decoded.
func normalizeArguments(args json.RawMessage) (json.RawMessage, error) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		return json.RawMessage("{}"), nil
	}
	if args[0] == '"' {
		var s string
		if err := json.Unmarshal(args, &s); err != nil {
			return nil, fmt.Errorf("%w: arguments: %v", ErrToolCall, err)
		}
		if strings.TrimSpace(s) == "" {
			return json.RawMessage("{}"), nil
		}
		args = bytes.TrimSpace([]byte(s))
		if !json.Valid(args) {
			return nil, fmt.Errorf("%w: arguments are a string that is not JSON", ErrToolCall)
		}
	}
	if args[0] != '{' {
		return nil, fmt.Errorf("%w: arguments are not a JSON object", ErrToolCall)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, args); err != nil {
		return nil, fmt.Errorf("%w: arguments: %v", ErrToolCall, err)
	}
	return json.RawMessage(b.Bytes()), nil
}

// newCallID returns "call_" and 24 random hex digits.
func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "call_" + hex.EncodeToString(b[:])
}

// clip shortens s for an error message.
// Clip shortens s to at most n bytes and "...", for quoting model output in messages.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// spans collects the pieces of a reply as a parser walks it: content,
// calls, and suspect text (which also stays in content).
type spans struct {
	content  strings.Builder
	calls    []ToolCall
	suspects []string
	errs     []error
}

func (s *spans) text(t string) { s.content.WriteString(t) }

func (s *spans) suspect(raw string, err error) {
	s.content.WriteString(raw)
	s.suspects = append(s.suspects, strings.TrimSpace(raw))
	s.errs = append(s.errs, err)
}

// result returns Parse's values. original is returned unchanged when no
// call parsed.
func (s *spans) result(original string) (string, []ToolCall, string, error) {
	content := s.content.String()
	if len(s.calls) == 0 {
		content = original
	} else {
		content = strings.TrimSpace(content)
	}
	if len(s.suspects) == 0 {
		return content, s.calls, "", nil
	}
	return content, s.calls, strings.Join(s.suspects, "\n"), errors.Join(s.errs...)
}
