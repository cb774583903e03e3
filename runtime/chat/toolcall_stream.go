package chat

import (
	"errors"
	"strings"

	"github.com/superfluid/superfluid/runtime/llm"
)

// ToolCallDelta is one streamed piece of a tool call (see llm.ToolCallDelta).
type ToolCallDelta = llm.ToolCallDelta

// ToolStream is the incremental form of a ToolParser for a streamed reply.
// Content flows out as it arrives, except text that may start a call: a
// family marker (or the first bytes of one), or a reply that opens with
// JSON. That text is held until it is a complete call (a Hermes block
// ending in </tool_call>) or until Close, then parsed by the ToolParser.
// A call's deltas come out together once it is complete.
//
// Joined, the content deltas equal Parse's content up to whitespace next
// to calls, and the calls equal Parse's (with their own ids). A ToolStream
// is not safe for concurrent use.
type ToolStream struct {
	p         ToolParser
	markers   []string
	buf       string // held text
	capturing bool   // buf starts with a call (or what may be one)
	jsonStart bool   // the capture began at a reply opening with JSON
	started   bool   // non-whitespace content has gone out
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
				t := strings.TrimLeft(s.buf, " \t\r\n")
				if t == "" {
					break // leading whitespace waits: a call may follow
				}
				if strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") || strings.HasPrefix(t, "`") {
					s.capturing, s.jsonStart = true, true
					continue
				}
				s.started = true
			}
			i, _ := s.firstMarker()
			if i < 0 {
				keep := s.markerPrefixLen()
				out.WriteString(s.buf[:len(s.buf)-keep])
				s.buf = s.buf[len(s.buf)-keep:]
				break
			}
			out.WriteString(s.buf[:i])
			s.buf = s.buf[i:]
			s.capturing = true
			continue
		}
		if s.jsonStart {
			switch jsonCallStart(s.buf) {
			case 0:
				return out.String(), calls // undecided: hold
			case -1:
				s.capturing, s.jsonStart, s.started = false, false, true
				continue
			}
		}
		end := s.blockEnd()
		if end < 0 {
			break
		}
		c, d := s.parse(s.buf[:end])
		out.WriteString(c)
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
	if s.capturing {
		content, calls = s.parse(s.buf)
	} else {
		content = s.buf
	}
	s.buf, s.capturing = "", false
	if len(s.suspects) > 0 {
		suspect, err = strings.Join(s.suspects, "\n"), errors.Join(s.errs...)
	}
	return content, calls, suspect, err
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

// firstMarker returns the position of the earliest marker in buf, or -1.
func (s *ToolStream) firstMarker() (int, string) {
	best, which := -1, ""
	for _, m := range s.markers {
		if i := strings.Index(s.buf, m); i >= 0 && (best < 0 || i < best) {
			best, which = i, m
		}
	}
	return best, which
}

// markerPrefixLen returns the length of the longest suffix of buf that is
// the start of a marker.
func (s *ToolStream) markerPrefixLen() int { return llm.HeldSuffix(s.buf, s.markers) }

// jsonCallStart decides whether a reply opening with JSON (or a code
// fence) opens like a call: 1 yes, -1 no, 0 not yet known.
func jsonCallStart(buf string) int {
	t := strings.TrimLeft(buf, " \t\r\n")
	if strings.HasPrefix(t, "`") {
		const fence = "```json"
		if len(t) < len(fence) {
			if strings.HasPrefix(fence, t) {
				return 0
			}
			return -1
		}
		if !strings.HasPrefix(t, fence) {
			return -1
		}
		t = strings.TrimLeft(t[len(fence):], " \t\r\n")
	}
	if callStart.MatchString(t) {
		return 1
	}
	if strings.Contains(t, ":") || len(t) > 64 {
		return -1
	}
	return 0
}
