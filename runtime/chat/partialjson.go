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
	best := p.result()
	if best == "" || !json.Valid([]byte(best)) {
		return json.RawMessage("{}"), false
	}
	return json.RawMessage(best), false
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
	open  *opener // this container and the ones around it, innermost first
}

// opener is one open container in a chain to the outermost: a mark keeps the chain of its
// moment in O(1), so marks cost nothing per byte and the closers are written once, at the end.
type opener struct {
	obj   bool
	outer *opener
}

// maxDepth is the nesting past which nothing is closed: encoding/json refuses deeper values.
const maxDepth = 10000

type partial struct {
	s     string
	stack []container
	// The longest closable prefix: s[:bestEnd] + bestExtra, then the closers of bestOpen.
	bestEnd   int
	bestExtra string
	bestOpen  *opener
	bestWhole bool // s[:bestEnd] is a whole value: no closers
	marked    bool
}

// result is the longest closable prefix, closed ("" when there is none).
func (p *partial) result() string {
	if !p.marked {
		return ""
	}
	var b strings.Builder
	b.WriteString(p.s[:p.bestEnd])
	b.WriteString(p.bestExtra)
	if !p.bestWhole {
		for o := p.bestOpen; o != nil; o = o.outer {
			if o.obj {
				b.WriteByte('}')
			} else {
				b.WriteByte(']')
			}
		}
	}
	return b.String()
}

func (p *partial) setBest(i int, extra string) {
	p.bestEnd, p.bestExtra, p.bestWhole, p.marked = i, extra, false, true
	p.bestOpen = nil
	if len(p.stack) > 0 {
		p.bestOpen = p.stack[len(p.stack)-1].open
	}
}

// mark records s[:i] (plus extra) as closable when every open container allows it.
func (p *partial) mark(i int, extra string) {
	if len(p.stack) == 0 {
		return
	}
	if top := p.stack[len(p.stack)-1]; top.state == opened || top.state == afterVal || extra != "" {
		p.setBest(i, extra)
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
			if len(p.stack) >= maxDepth {
				return
			}
			var outer *opener
			if top != nil {
				outer = top.open
			}
			p.stack = append(p.stack, container{obj: c == '{', state: opened, open: &opener{obj: c == '{', outer: outer}})
			i++
			p.mark(i, "")
		case c == '}' || c == ']':
			if top == nil || top.obj != (c == '}') || top.state != opened && top.state != afterVal {
				return
			}
			p.stack = p.stack[:len(p.stack)-1]
			i++
			if len(p.stack) == 0 {
				p.bestEnd, p.bestExtra, p.bestWhole, p.marked = i, "", true, true
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
					p.setBest(cut, `"`)
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
