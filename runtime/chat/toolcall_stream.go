package chat

import (
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/superfluid/superfluid/runtime/llm"
)

// ToolCallDelta is one streamed piece of a tool call (see llm.ToolCallDelta).
type ToolCallDelta = llm.ToolCallDelta

// ToolStream is the incremental form of a ToolParser for a streamed reply.
// Content flows out as it arrives, except text that may start a call: a
// family marker (or the first bytes of one), a reply that opens with JSON,
// a code fence or a wrapper tag (see GenericToolParser), or for Llama 3 a
// JSON object at the start of a line. That text is held until it is a
// complete call (a Hermes block ending in </tool_call>) or until Close,
// then parsed by the ToolParser. A call's deltas come out together once it
// is complete. Whitespace at the end of the content is held too, until
// more content follows: the parsers trim it next to calls, and a reply of
// parallel calls must not stream the newlines between them as content.
//
// Joined, the content deltas equal Parse's content when the reply makes no
// call; with calls they may differ in whitespace next to the calls (Parse
// trims it, the stream may have sent it before it knew). The calls equal
// Parse's, with their own ids. One known difference: text before a Hermes
// </tool_call> that had no <tool_call> has gone out as content before the
// closing tag shows it was a call; only a reply that opens with the JSON
// is recognized that way while streaming. A ToolStream is not safe for
// concurrent use.
type ToolStream struct {
	p         ToolParser
	markers   []string
	buf       string // held text
	ws        string // whitespace at the end of the content, held
	capturing bool   // buf starts with a call (or what may be one)
	jsonStart bool   // the capture began at JSON: it may turn out to be content
	started   bool   // the start of the reply is decided: it is not a call
	emitted   bool   // non-whitespace content has gone out
	index     int
	suspects  []string
	errs      []error
}

// NewToolStream returns a ToolStream that parses calls with p.
func NewToolStream(p ToolParser) *ToolStream {
	s := &ToolStream{p: p}
	switch p.(type) {
	case HermesToolParser:
		s.markers = []string{hermesOpen, hermesClose}
	case Llama3ToolParser:
		s.markers = []string{pythonTag}
	case MistralToolParser:
		s.markers = []string{mistralCalls}
	}
	return s
}

// Feed adds the next piece of the reply and returns the content and call
// deltas it completes.
func (s *ToolStream) Feed(piece string) (content string, calls []ToolCallDelta) {
	s.buf += piece
	var out strings.Builder
	for {
		if !s.capturing {
			if !s.started {
				t, whole := trimLeftSpace(s.buf)
				if t == "" || !whole {
					break // leading whitespace waits: a call may follow
				}
				if strings.ContainsAny(t[:1], "{[`<") {
					s.capturing, s.jsonStart = true, true
					continue
				}
				s.started = true
			}
			i, json := s.firstCall()
			if i < 0 {
				keep := s.markerPrefixLen()
				s.emit(&out, s.buf[:len(s.buf)-keep])
				s.buf = s.buf[len(s.buf)-keep:]
				break
			}
			s.emit(&out, s.buf[:i])
			s.buf = s.buf[i:]
			s.capturing, s.jsonStart = true, json
			continue
		}
		if s.jsonStart {
			switch jsonCallStart(s.buf) {
			case 0:
				return out.String(), calls // undecided: hold
			case -1:
				s.capturing, s.jsonStart = false, false
				if s.started {
					// A line-start brace that opens no call: content, and
					// the search goes on after it.
					s.emit(&out, s.buf[:1])
					s.buf = s.buf[1:]
				}
				s.started = true
				continue
			}
		}
		end := s.blockEnd()
		if end < 0 {
			break
		}
		c, d := s.parse(s.buf[:end])
		s.emit(&out, c)
		calls = append(calls, d...)
		s.buf = s.buf[end:]
		s.capturing, s.jsonStart, s.started = false, false, true
	}
	return out.String(), calls
}

// Close ends the reply: it parses what is still held and returns the
// last deltas, with the suspect text and error of the whole reply (see
// ToolParser.Parse).
func (s *ToolStream) Close() (content string, calls []ToolCallDelta, suspect string, err error) {
	var out strings.Builder
	if s.capturing {
		var c string
		c, calls = s.parse(s.buf)
		s.emit(&out, c)
	} else {
		s.emit(&out, s.buf)
	}
	if s.index == 0 {
		out.WriteString(s.ws) // no calls: the content is the reply unchanged
	}
	s.buf, s.ws, s.capturing = "", "", false
	if len(s.suspects) > 0 {
		suspect, err = strings.Join(s.suspects, "\n"), errors.Join(s.errs...)
	}
	return out.String(), calls, suspect, err
}

// emit writes content to out, holding its trailing whitespace in s.ws
// until more content follows. Once a call went out before any content,
// the content's leading whitespace is dropped, as Parse trims it.
func (s *ToolStream) emit(out *strings.Builder, text string) {
	body := strings.TrimRight(text, " \t\r\n")
	if body == "" {
		s.ws += text
		return
	}
	tail := text[len(body):]
	if s.index > 0 && !s.emitted {
		s.ws, body = "", strings.TrimLeft(body, " \t\r\n")
	}
	out.WriteString(s.ws)
	out.WriteString(body)
	s.ws, s.emitted = tail, true
}

// parse runs the parser on a held block and turns its calls into deltas.
func (s *ToolStream) parse(block string) (string, []ToolCallDelta) {
	content, calls, sus, err := s.p.Parse(block)
	if err != nil {
		s.suspects, s.errs = append(s.suspects, sus), append(s.errs, err)
	}
	var deltas []ToolCallDelta
	for _, c := range calls {
		deltas = append(deltas,
			ToolCallDelta{Index: s.index, ID: c.ID, Name: c.Name},
			ToolCallDelta{Index: s.index, Arguments: string(c.Arguments)})
		s.index++
	}
	return content, deltas
}

// blockEnd returns where a held call is complete and can be parsed: after
// a Hermes </tool_call>; other families' calls end with the reply (-1).
func (s *ToolStream) blockEnd() int {
	if _, ok := s.p.(HermesToolParser); !ok {
		return -1
	}
	if i := strings.Index(s.buf, hermesClose); i >= 0 {
		return i + len(hermesClose)
	}
	return -1
}

// firstCall returns where the earliest possible call starts in buf, or
// -1, and whether it is JSON that may still turn out to be content (a
// Llama 3 call on a line of its own, see lineStartCall).
func (s *ToolStream) firstCall() (int, bool) {
	best := -1
	for _, m := range s.markers {
		if i := strings.Index(s.buf, m); i >= 0 && (best < 0 || i < best) {
			best = i
		}
	}
	if _, ok := s.p.(Llama3ToolParser); !ok {
		return best, false
	}
	limit := len(s.buf)
	if best >= 0 {
		limit = best
	}
	for i := strings.IndexByte(s.buf[:limit], '{'); i >= 0; {
		before := s.buf[:i]
		if strings.HasSuffix(strings.TrimRight(s.ws+before, " \t"), "\n") && (s.emitted || strings.TrimSpace(before) != "") {
			return i, true
		}
		j := strings.IndexByte(s.buf[i+1:limit], '{')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return best, false
}

// markerPrefixLen returns the length of the longest suffix of buf that is
// the start of a marker.
func (s *ToolStream) markerPrefixLen() int { return llm.HeldSuffix(s.buf, s.markers) }

// jsonCallStart decides whether a reply opening with JSON, a code fence or
// a wrapper tag opens like a call: 1 yes, -1 no, 0 not yet known. It
// agrees with what the parsers accept: a fence with any language word
// (unfence), one of wrapperTags (unwrapTag), then an opening callStart
// matches.
func jsonCallStart(buf string) int {
	t, whole := trimLeftSpace(buf)
	if !whole {
		return 0
	}
	if strings.HasPrefix(t, "`") {
		const fence = "```"
		if len(t) < len(fence) {
			if strings.HasPrefix(fence, t) {
				return 0
			}
			return -1
		}
		if !strings.HasPrefix(t, fence) {
			return -1
		}
		nl := strings.IndexByte(t, '\n')
		lang := t[len(fence):]
		if nl >= 0 {
			lang = t[len(fence):nl]
		}
		if w := strings.TrimSpace(lang); w != "" && !isWord(w) || len(lang) > 32 {
			return -1
		}
		if nl < 0 {
			return 0
		}
		if t, whole = trimLeftSpace(t[nl+1:]); !whole {
			return 0
		}
	}
	if strings.HasPrefix(t, "<") {
		var opened bool
		for _, tag := range wrapperTags {
			open := "<" + tag + ">"
			if strings.HasPrefix(t, open) {
				if t, whole = trimLeftSpace(t[len(open):]); !whole {
					return 0
				}
				opened = true
				break
			}
			if strings.HasPrefix(open, t) {
				return 0
			}
		}
		if !opened {
			return -1
		}
	}
	if callStart.MatchString(t) {
		return 1
	}
	squeezed := strings.Map(func(r rune) rune {
		if strings.ContainsRune(" \t\r\n\f", r) { // what \s in callStart matches
			return -1
		}
		return r
	}, t)
	for _, o := range callOpenings {
		if strings.HasPrefix(o, squeezed) {
			return 0
		}
	}
	return -1
}

// trimLeftSpace trims the whitespace strings.TrimSpace trims (the parsers trim a reply with it,
// so a stream that trimmed less would not see a call after a \v or a no-break space) from the
// start of s. whole is false when what is left starts with an incomplete character, which may
// still turn out to be a space.
func trimLeftSpace(s string) (t string, whole bool) {
	t = strings.TrimLeftFunc(s, unicode.IsSpace)
	return t, t == "" || utf8.FullRuneInString(t)
}
