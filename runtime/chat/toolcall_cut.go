package chat

import (
	"encoding/json"
	"strings"
)

// CutCall is the tool call the token cap cut short: its name, as far as it was written, and its
// arguments text as generated (the start of a JSON object, not valid JSON).
type CutCall struct {
	Name string
	// NameDone reports whether the name was written whole; when false, Name is only its start.
	NameDone  bool
	Arguments string
	// hasArgs reports whether the arguments key was reached: without it (or a forced tool's
	// name) a cut object is taken for JSON content, as Parse takes a whole one.
	hasArgs bool
}

// salvage reads the start of a call (or of a list of calls) that the token cap cut short, in
// the JSON shapes the parsers read, after a family marker, fence or wrapper tag. It returns the
// calls that were complete and the cut one; ok is false when the text does not open like a call.
func salvage(text string) (calls []ToolCall, cut *CutCall, ok bool) {
	t := strings.TrimSpace(text)
	marked := false // a family marker says this is a call
	for _, m := range []string{hermesOpen, pythonTag, mistralCalls} {
		if strings.HasPrefix(t, m) {
			t, marked = strings.TrimSpace(t[len(m):]), true
		}
	}
	if strings.HasPrefix(t, "```") {
		nl := strings.IndexByte(t, '\n')
		if nl < 0 {
			return nil, nil, false
		}
		t = strings.TrimSpace(t[nl+1:])
	}
	for _, tag := range wrapperTags {
		t = strings.TrimSpace(strings.TrimPrefix(t, "<"+tag+">"))
	}
	if name, args, found := strings.Cut(t, mistralArgs); found && isWord(strings.TrimSpace(name)) {
		return nil, &CutCall{Name: strings.TrimSpace(name), NameDone: true, Arguments: strings.TrimLeft(args, " \t\r\n"), hasArgs: true}, true
	}
	if sq := squeeze(t); !strings.HasPrefix(t, "{") && !strings.HasPrefix(sq, "[{") && sq != "[" {
		return nil, nil, false
	}
	if strings.HasPrefix(t, "[") {
		rest := strings.TrimSpace(t[1:])
		for {
			rest = strings.TrimLeft(strings.TrimPrefix(strings.TrimSpace(rest), ","), " \t\r\n")
			if rest == "" && len(calls) > 0 {
				return calls, nil, true
			}
			if rest == "" { // cut before the first call opened: only a forced call gets a name
				return nil, &CutCall{}, true
			}
			raw, n, err := decodeValue(rest)
			if err != nil {
				break
			}
			c, err := callFromObject(raw, false)
			if err != nil {
				return nil, nil, false
			}
			calls = append(calls, c)
			rest = rest[n:]
		}
		t = rest
	}
	cut = cutObject(t)
	if cut == nil {
		return nil, nil, false
	}
	cut.hasArgs = cut.hasArgs || marked || len(calls) > 0
	return calls, cut, true
}

// cutObject reads a call object cut short: {"name": "...", "arguments": {... (or "parameters";
// OpenAI's {"type":"function","function":{...}} wrapping too). nil when no name was started.
func cutObject(t string) *CutCall {
	if !strings.HasPrefix(t, "{") {
		return nil
	}
	c := &CutCall{}
	i := 1
	for {
		i = skipSpace(t, i)
		if i >= len(t) || t[i] != '"' {
			break
		}
		end, _ := stringEnd(t, i)
		if end < 0 {
			break // a key cut short
		}
		key := t[i+1 : end-1]
		i = skipSpace(t, end)
		if i >= len(t) || t[i] != ':' {
			break
		}
		i = skipSpace(t, i+1)
		if i >= len(t) {
			break
		}
		switch key {
		case "function":
			if t[i] == '{' {
				return cutObject(t[i:])
			}
		case "name":
			if t[i] != '"' {
				return nil
			}
			end, cutAt := stringEnd(t, i)
			if end < 0 {
				c.Name = unquote(t[i+1 : cutAt])
				return c
			}
			c.Name, c.NameDone = unquote(t[i+1:end-1]), true
			i = end
			i = skipSpace(t, i)
			if i < len(t) && t[i] == ',' {
				i++
			}
			continue
		case "arguments", "parameters":
			c.Arguments, c.hasArgs = t[i:], true
			if c.Name == "" {
				return nil // Hermes 2 Pro writes arguments first; cut there, the name is unknown
			}
			return c
		}
		// Another key ("type": "function", an id): skip its value.
		end, complete := skipValue(t, i)
		if !complete {
			break
		}
		i = skipSpace(t, end)
		if i < len(t) && t[i] == ',' {
			i++
		}
	}
	// Cut before the name was written: a call all the same when nothing but the name can
	// come first (a forced call's grammar writes it first; Cut completes it from the tools).
	if c.Name == "" && strings.HasPrefix(`"name":`, squeeze(t[1:])) {
		return c
	}
	if c.Name == "" {
		return nil
	}
	return c
}

// unquote decodes the JSON escapes of a string's content (a whole call's name is decoded the
// same way); content that does not decode is returned as it is.
func unquote(content string) string {
	var s string
	if json.Unmarshal([]byte(`"`+content+`"`), &s) != nil {
		return content
	}
	return s
}

// squeeze drops JSON whitespace from s.
func squeeze(s string) string {
	return strings.Map(func(r rune) rune {
		if strings.ContainsRune(" \t\r\n", r) {
			return -1
		}
		return r
	}, s)
}

func skipSpace(s string, i int) int {
	for i < len(s) && strings.IndexByte(" \t\r\n", s[i]) >= 0 {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value at s[i], and false when it runs to the end of s.
func skipValue(s string, i int) (int, bool) {
	if s[i] == '"' {
		end, _ := stringEnd(s, i)
		return end, end >= 0
	}
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '"':
			end, _ := stringEnd(s, j)
			if end < 0 {
				return 0, false
			}
			j = end - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth < 0 {
				return j, true
			}
			if depth == 0 {
				return j + 1, true
			}
		case ',':
			if depth == 0 {
				return j, true
			}
		}
	}
	return 0, false
}

// Cut ends a reply the token cap cut short, like Close, but a call still held that does not
// parse is returned with what was generated of it: its opening delta, with the name whole (or
// completed by complete, which gets the start of a name and returns the one tool it can only
// be, or ""), and its arguments text as far as it got, on the next index. A cut object that
// reached neither its arguments nor a name complete accepts is not taken for a call; after
// complete calls, or in a forced reply (complete is not nil: the grammar wrote a call), it is
// left out, and cut has an empty Name to say so. cut names that call;
// nil when no call was cut (the reply then ends as Close ends it). Text that opens like a call
// but whose name was not reached is still served as content, as Close serves it.
func (s *ToolStream) Cut(complete func(prefix string) string) (content string, calls []ToolCallDelta, cut *CutCall, suspect string, err error) {
	if !s.capturing {
		content, calls, suspect, err = s.Close()
		return content, calls, nil, suspect, err
	}
	if _, whole, _, perr := s.p.Parse(s.buf); perr == nil && len(whole) > 0 {
		content, calls, suspect, err = s.Close()
		return content, calls, nil, suspect, err
	}
	whole, c, ok := salvage(s.buf)
	forced := false
	if ok && c != nil && complete != nil {
		if name := complete(c.Name); name != "" && (name == c.Name || !c.NameDone) {
			c.Name, c.NameDone, forced = name, true, true
		}
	}
	// A forced call's text is never content: cut before its name is known it is left out.
	if !ok || c != nil && (!c.NameDone || !c.hasArgs && !forced) && len(whole) == 0 && complete == nil {
		content, calls, suspect, err = s.Close()
		return content, calls, nil, suspect, err
	}
	if c != nil && (!c.NameDone || !c.hasArgs && !forced) {
		// Complete calls came before it: they are served, and the cut one, whose name is not
		// known, is left out (its Name is "" to say so).
		c = &CutCall{}
	}
	for _, w := range whole {
		calls = append(calls,
			ToolCallDelta{Index: s.index, ID: w.ID, Name: w.Name},
			ToolCallDelta{Index: s.index, Arguments: string(w.Arguments)})
		s.index++
	}
	if c != nil && c.Name != "" {
		calls = append(calls, ToolCallDelta{Index: s.index, ID: newCallID(), Name: c.Name})
		if c.Arguments != "" {
			calls = append(calls, ToolCallDelta{Index: s.index, Arguments: c.Arguments})
		}
		s.index++
	}
	s.buf, s.ws, s.capturing = "", "", false
	return "", calls, c, "", nil
}
