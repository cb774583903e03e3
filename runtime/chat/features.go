package chat

// What a template can do, read from its source once at Parse: whether it
// renders tool definitions itself, and whether (and with which markers) the
// model reasons before answering.

import "strings"

// Reasoning markers: the default pair (DeepSeek-R1, QwQ, Qwen3 and most
// others), Mistral's (Magistral) and Cohere's (Command R7B).
const (
	markThinkOpen    = "<think>"
	markThinkClose   = "</think>"
	markMistralOpen  = "[THINK]"
	markMistralClose = "[/THINK]"
	markCohereOpen   = "<|START_THINKING|>"
	markCohereClose  = "<|END_THINKING|>"
)

// thinkingSigns are the strings whose presence outside comments means a
// template supports reasoning: its kwarg, the message key it renders, or
// one of the marker pairs.
var thinkingSigns = []string{
	"enable_thinking", "reasoning_content",
	markThinkOpen, markThinkClose, markMistralOpen, markCohereOpen,
}

// features is what Parse learns about a template from its source.
type features struct {
	nativeTools bool
	thinking    bool
	open, close string // reasoning markers
}

// scanFeatures reads the features of src, a template that lexes (Parse
// has checked). Comments do not count: a template that says "tools" only
// in a comment does not render tools.
func scanFeatures(src string) features {
	f := features{open: markThinkOpen, close: markThinkClose}
	segs, err := lex(normalizeSource(src))
	if err != nil {
		return f
	}
	var code strings.Builder // everything but comments
	for _, s := range segs {
		switch s.kind {
		case segExpr, segStmt:
			if usesVariable(s.text, "tools") {
				f.nativeTools = true
			}
			code.WriteString(s.text)
		case segText:
			code.WriteString(s.text)
		}
	}
	text := code.String()
	for _, sign := range thinkingSigns {
		if strings.Contains(text, sign) {
			f.thinking = true
		}
	}
	switch {
	case strings.Contains(text, markMistralOpen):
		f.open, f.close = markMistralOpen, markMistralClose
	case strings.Contains(text, markCohereOpen):
		f.open, f.close = markCohereOpen, markCohereClose
	}
	return f
}

// usesVariable reports whether the tag content code reads the variable
// name: the identifier outside string literals, not an attribute
// (message.tools), not part of a longer name (tools_in_user_message) and
// not a keyword argument or assignment target (f(tools=x), set tools = x).
func usesVariable(code, name string) bool {
	for i := 0; i < len(code); {
		c := code[i]
		switch {
		case c == '\'' || c == '"':
			for i++; i < len(code) && code[i] != c; i++ {
				if code[i] == '\\' {
					i++
				}
			}
			i++
		case isIdentStart(c):
			start := i
			for i < len(code) && (isIdentStart(code[i]) || code[i] >= '0' && code[i] <= '9') {
				i++
			}
			if code[start:i] != name {
				continue
			}
			before := strings.TrimRight(code[:start], " \t\n")
			after := strings.TrimLeft(code[i:], " \t\n")
			attribute := strings.HasSuffix(before, ".")
			assigned := strings.HasPrefix(after, "=") && !strings.HasPrefix(after, "==")
			if !attribute && !assigned {
				return true
			}
		case c >= '0' && c <= '9':
			// A number: skip its digits so that "1e5tools" cannot start a
			// name mid-token (Jinja would not lex it as one either).
			for i < len(code) && (isIdentStart(code[i]) || code[i] >= '0' && code[i] <= '9' || code[i] == '.') {
				i++
			}
		default:
			i++
		}
	}
	return false
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// NativeTools reports whether the template renders tool definitions itself:
// its code (not a comment or text) reads the tools variable. Render passes
// such a template the tools, tool calls and tool results as HF does; other
// templates get the polyfill (see the package doc).
func (t *Template) NativeTools() bool { return t.features.nativeTools }

// Thinking reports whether the template supports reasoning: outside
// comments it mentions enable_thinking, reasoning_content or a reasoning
// marker (<think>, </think>, [THINK], <|START_THINKING|>).
func (t *Template) Thinking() bool { return t.features.thinking }

// ThinkingMarkers returns the markers a reply's reasoning sits between, for
// SplitReasoning and ReasoningStream: "[THINK]" and "[/THINK]" when the
// template uses them (Magistral), "<|START_THINKING|>" and
// "<|END_THINKING|>" for Command R style templates, else "<think>" and
// "</think>" (also for templates without reasoning support).
func (t *Template) ThinkingMarkers() (open, close string) {
	return t.features.open, t.features.close
}
