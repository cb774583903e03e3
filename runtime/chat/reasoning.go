package chat

// Reasoning splitting: models that think write their reasoning between two
// markers before the answer (<think>...</think> for DeepSeek-R1 and Qwen3,
// [THINK]...[/THINK] for Magistral, <|START_THINKING|>...<|END_THINKING|>
// for Command R7B). The reply is split into reasoning (reasoning_content)
// and content the way llama.cpp's server does it (try_parse_reasoning in
// common/chat-parser.cpp):
//
//   - reasoning is recognized only at the start of the reply, after
//     optional whitespace, or from the first byte when the prompt already
//     opened it (startInside, see PromptOpensReasoning); an open marker
//     later in the reply is content, and there is one reasoning block;
//   - the reasoning is trimmed of whitespace at both ends, and the
//     whitespace after the close marker is dropped, so content does not
//     start with the "\n\n" the models write there;
//   - a reply cut off inside the reasoning is all reasoning;
//   - when the prompt opened the reasoning and the model writes the open
//     marker again, the repeated marker is dropped;
//   - a close marker without an open marker, when the prompt did not open
//     the reasoning, is content, verbatim. llama.cpp decides this from the
//     prompt alone too (thinking_forced_open is set only when the prompt
//     ends with the open marker, and its test
//     message_assist_thoughts_unopened_unparsed keeps
//     "I'm\nthinking</think>Hello" as content), and so does Ollama.
//     Guessing from the reply instead would mean holding all content until
//     the end, in case a close marker comes, and would take a model's
//     explanation of the tag for reasoning.
//
// Deliberate differences from llama.cpp: whitespace before an open marker
// at the start of the reply is dropped (llama.cpp keeps it as content,
// which then starts with a stray newline); a second block right after the
// first stays content (recent llama.cpp merges it into the reasoning); and
// a reply cut off in the middle of a close marker keeps that partial
// marker in the reasoning (llama.cpp drops it).

import (
	"strings"

	"github.com/superfluid/superfluid/runtime/llm"
)

// reasoningSpace is the whitespace trimmed around reasoning: C's isspace,
// which llama.cpp uses.
const reasoningSpace = " \t\n\v\f\r"

// PromptOpensReasoning reports whether a rendered prompt leaves the reply
// inside a reasoning block: the prompt, without trailing whitespace, ends
// with the open marker. The DeepSeek-R1, QwQ and Qwen3-Thinking-2507
// templates end the generation prompt with "<think>\n"; Qwen3 with
// enable_thinking=false ends it with "<think>\n\n</think>\n\n", which is
// closed (and Qwen3 thinking ends it with the assistant header: the model
// opens the block itself).
//
// Only the end of the prompt counts, as in llama.cpp and Ollama: an open
// marker earlier in the prompt may be a user quoting the tag.
func PromptOpensReasoning(prompt, open, close string) bool {
	if open == "" || close == "" {
		return false
	}
	p := strings.TrimRight(prompt, reasoningSpace)
	// A close marker that ends with the open marker (not one of the known
	// pairs, but cheap to rule out) closes rather than opens.
	return strings.HasSuffix(p, open) && !strings.HasSuffix(p, close)
}

// SplitReasoning splits a whole reply into reasoning and content; it is
// what a ReasoningStream fed the same text returns, joined. Empty markers
// mean no reasoning: content is text.
func SplitReasoning(text, open, close string, startInside bool) (reasoning, content string) {
	if open == "" || close == "" {
		return "", text
	}
	body := strings.TrimLeft(text, reasoningSpace)
	switch {
	case strings.HasPrefix(body, open):
		body = body[len(open):] // with startInside, a repeated open marker
	case !startInside:
		return "", text
	}
	i := strings.Index(body, close)
	if i < 0 {
		return strings.Trim(body, reasoningSpace), ""
	}
	return strings.Trim(body[:i], reasoningSpace), strings.TrimLeft(body[i+len(close):], reasoningSpace)
}

// reasoningState is where a ReasoningStream is in the reply.
type reasoningState int

const (
	beforeReasoning reasoningState = iota // start of the reply: an open marker may come
	inReasoning                           // between the markers
	afterReasoning                        // after the close marker, in its whitespace
	inContent                             // content: everything passes
)

// ReasoningStream splits a streamed reply into reasoning and content.
//
// It holds back only what it must: at the start of the reply, whitespace
// and a possible beginning of the open marker; inside the reasoning, a
// possible beginning of the close marker and the whitespace before it
// (dropped if the close marker follows). Everything else goes out with the
// piece that brought it. Joined, the outputs of Feed and Close equal
// SplitReasoning of the whole reply.
//
// A ReasoningStream is not safe for concurrent use.
type ReasoningStream struct {
	open, close string
	state       reasoningState
	repeatOpen  bool   // the prompt opened the reasoning and the model may open it again
	started     bool   // non-whitespace reasoning has gone out
	buf         string // held text
}

// NewReasoningStream returns a stream that splits at the open and close
// markers. startInside says the prompt ended with the open marker (see
// PromptOpensReasoning), so the reply starts inside the reasoning. Empty
// markers mean no reasoning: everything is content.
func NewReasoningStream(open, close string, startInside bool) *ReasoningStream {
	s := &ReasoningStream{open: open, close: close, repeatOpen: startInside}
	switch {
	case open == "" || close == "":
		s.state = inContent
	case startInside:
		s.state = inReasoning
	}
	return s
}

// Feed adds the next piece of the reply and returns the reasoning and
// content that can go out now.
func (s *ReasoningStream) Feed(piece string) (reasoning, content string) {
	s.buf += piece
	var r, c strings.Builder
	for s.buf != "" {
		switch s.state {
		case beforeReasoning:
			t := strings.TrimLeft(s.buf, reasoningSpace)
			switch {
			case strings.HasPrefix(t, s.open):
				s.buf, s.state = t[len(s.open):], inReasoning
				continue
			case strings.HasPrefix(s.open, t):
				return r.String(), c.String() // whitespace, or the open marker's start
			}
			s.state = inContent
		case inReasoning:
			if !s.started {
				t := strings.TrimLeft(s.buf, reasoningSpace)
				if s.repeatOpen {
					// The model may write the open marker the prompt
					// already wrote; llama.cpp skips it too.
					if strings.HasPrefix(t, s.open) {
						t, s.repeatOpen = strings.TrimLeft(t[len(s.open):], reasoningSpace), false
					} else if strings.HasPrefix(s.open, t) && !strings.HasPrefix(s.close, t) {
						s.buf = t
						return r.String(), c.String()
					}
				}
				s.buf = t // whitespace after the open marker is dropped
			}
			if i := strings.Index(s.buf, s.close); i >= 0 {
				r.WriteString(strings.TrimRight(s.buf[:i], reasoningSpace))
				s.buf, s.state = s.buf[i+len(s.close):], afterReasoning
				continue
			}
			keep := llm.HeldSuffix(s.buf, []string{s.close})
			n := len(strings.TrimRight(s.buf[:len(s.buf)-keep], reasoningSpace))
			if n > 0 {
				r.WriteString(s.buf[:n])
				s.buf, s.started, s.repeatOpen = s.buf[n:], true, false
			}
			return r.String(), c.String()
		case afterReasoning:
			s.buf = strings.TrimLeft(s.buf, reasoningSpace)
			if s.buf != "" {
				s.state = inContent
			}
		case inContent:
			c.WriteString(s.buf)
			s.buf = ""
		}
	}
	return r.String(), c.String()
}

// Close ends the reply and returns what was held: at the start of a reply
// without reasoning it is content; inside the reasoning (a reply cut off
// by max_tokens) it is reasoning, trimmed of trailing whitespace.
func (s *ReasoningStream) Close() (reasoning, content string) {
	held := s.buf
	s.buf = ""
	switch s.state {
	case beforeReasoning:
		return "", held
	case inReasoning:
		return strings.TrimRight(held, reasoningSpace), ""
	}
	return "", held
}
