package chat

import (
	"encoding/json"
	"strings"
)

// CloseJSON turns the start of a JSON object that was cut short (a tool call's arguments when
// the token cap cut the reply) into a valid JSON object: the longest prefix that ends after a
// whole member (or inside a string value, which is closed where it was cut), with the open
// strings, arrays and objects closed. A key without its value, a cut number or literal, and a
// cut escape sequence are left out. complete reports whether s was valid JSON already; text that
// does not start an object gives {}.
func CloseJSON(s string) (out json.RawMessage, complete bool) {
	t := strings.TrimSpace(s)
	if json.Valid([]byte(t)) && strings.HasPrefix(t, "{") {
		return json.RawMessage(t), true
	}
	if !strings.HasPrefix(t, "{") {
		return json.RawMessage("{}"), false
	}
	p := &partial{s: t}
	p.scan()
	if p.best == "" || !json.Valid([]byte(p.best)) {
		return json.RawMessage("{}"), false
	}
	return json.RawMessage(p.best), false
}

// Container states while scanning.
const (
	opened    = iota // just after { or [: closable
	afterKey         // an object key was read: expect ':'
	wantValue        // expect a value (after ':' or an array's ',')
	wantKey          // after an object's ',': expect a key
	afterVal         // after a value: closable
)

type container struct {
	obj   bool
	state int
}

type partial struct {
	s     string
	stack []container
	best  string // the longest closable prefix, closed
}

func (p *partial) closers() string {
	var b strings.Builder
	for i := len(p.stack) - 1; i >= 0; i-- {
		if p.stack[i].obj {
			b.WriteByte('}')
		} else {
			b.WriteByte(']')
		}
	}
	return b.String()
}

// mark records s[:i] (plus extra) as closable when every open container allows it.
func (p *partial) mark(i int, extra string) {
	if len(p.stack) == 0 {
		return
	}
	if top := p.stack[len(p.stack)-1]; top.state == opened || top.state == afterVal || extra != "" {
		p.best = p.s[:i] + extra + p.closers()
	}
}

// value records that a whole value ended at i.
func (p *partial) value(i int) {
	if len(p.stack) == 0 {
		return
	}
	p.stack[len(p.stack)-1].state = afterVal
	p.mark(i, "")
}

func (p *partial) scan() {
	s := p.s
	for i := 0; i < len(s); {
		c := s[i]
		var top *container
		if len(p.stack) > 0 {
			top = &p.stack[len(p.stack)-1]
		}
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			i++
		case c == '{' || c == '[':
			if top != nil && top.state != wantValue && !(top.state == opened && !top.obj) {
				return
			}
			p.stack = append(p.stack, container{obj: c == '{', state: opened})
			i++
			p.mark(i, "")
		case c == '}' || c == ']':
			if top == nil || top.obj != (c == '}') || top.state != opened && top.state != afterVal {
				return
			}
			p.stack = p.stack[:len(p.stack)-1]
			i++
			if len(p.stack) == 0 {
				p.best = s[:i]
				return
			}
			p.value(i)
		case c == ',':
			if top == nil || top.state != afterVal {
				return
			}
			top.state = wantValue
			if top.obj {
				top.state = wantKey
			}
			i++
		case c == ':':
			if top == nil || top.state != afterKey {
				return
			}
			top.state = wantValue
			i++
		case c == '"':
			end, cut := stringEnd(s, i)
			if top == nil {
				return
			}
			isKey := top.obj && (top.state == opened || top.state == wantKey)
			if cut >= 0 { // the string runs to the end
				if !isKey && (top.state == wantValue || top.state == opened) {
					p.best = s[:cut] + `"` + p.closers()
				}
				return
			}
			i = end
			if isKey {
				top.state = afterKey
				continue
			}
			if top.state != wantValue && !(top.state == opened && !top.obj) {
				return
			}
			p.value(i)
		default: // a number or a literal
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\r\n,]}:", rune(s[j])) {
				j++
			}
			if top == nil || j == len(s) || !json.Valid([]byte(s[i:j])) {
				return // cut (or broken): what it would have been is unknown
			}
			if top.state != wantValue && !(top.state == opened && !top.obj) {
				return
			}
			i = j
			p.value(i)
		}
	}
}

// stringEnd returns the index after the string that opens at s[i], or, when the string is cut,
// -1 and the length of its longest prefix that ends outside an escape sequence.
func stringEnd(s string, i int) (end, cut int) {
	for j := i + 1; j < len(s); {
		switch s[j] {
		case '"':
			return j + 1, -1
		case '\\':
			n := 2
			if j+1 < len(s) && s[j+1] == 'u' {
				n = 6
			}
			if j+n > len(s) {
				return -1, j
			}
			j += n
		default:
			j++
		}
	}
	return -1, len(s)
}
