package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
)

// node is one JSON value of a schema document. Objects keep their keys in document order because
// the converter lays out "properties" in that order (and ToolCall must write "name" first); the
// parent link gives error paths without storing a path per node.
type node struct {
	kind   kind
	text   string   // a string's value, a number's literal, "true" or "false"
	keys   []string // an object's keys, in document order
	kids   []*node  // an object's values (parallel to keys) or an array's elements
	parent *node
	index  int // position in parent.kids
}

type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

func (k kind) String() string {
	return [...]string{"null", "a boolean", "a number", "a string", "an array", "an object"}[k]
}

// get returns an object's value for key, or nil.
func (n *node) get(key string) *node {
	for i, k := range n.keys {
		if k == key {
			return n.kids[i]
		}
	}
	return nil
}

// path is n's JSON pointer, as a URI fragment ("#/properties/a").
func (n *node) path() string {
	var segs []string
	for c := n; c.parent != nil; c = c.parent {
		if c.parent.kind == kindObject {
			segs = append(segs, escapeToken(c.parent.keys[c.index]))
		} else {
			segs = append(segs, strconv.Itoa(c.index))
		}
	}
	var b strings.Builder
	b.WriteByte('#')
	for i := len(segs) - 1; i >= 0; i-- {
		b.WriteByte('/')
		b.WriteString(segs[i])
	}
	return b.String()
}

// child is the path of key inside n, for a refusal found before the child node exists.
func (n *node) child(key string) string {
	if n == nil {
		return "#"
	}
	return n.path() + "/" + escapeToken(key)
}

func escapeToken(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// document is a parsed schema.
type document struct {
	root *node
	// refs are the objects that have a "$ref" key, anywhere: the converter resolves every one of
	// them, data included (a "default" holding {"$ref": ...} too).
	refs []*node
}

// open is an object or array being parsed.
type open struct {
	n      *node
	key    string // the key whose value comes next (objects)
	hasKey bool
	seen   map[string]bool // keys so far (objects)
}

// parse reads raw into a tree, walking tokens with an explicit stack so that no nesting depth can
// exhaust a stack (encoding/json's own limit is 10,000 levels and its message is unhelpful), and
// refuses on the way what no schema needs: nesting beyond MaxDepth, more than MaxValues values,
// duplicate or overlong keys, NUL characters (the converter's output travels as a C string, so a
// NUL would silently cut the grammar short).
func parse(raw []byte) (*document, error) {
	if len(raw) > MaxBytes {
		return nil, refuseSize("#", "the schema is %d bytes, more than the %d this server accepts; shorten descriptions or split the schema", len(raw), MaxBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	doc := &document{}
	var stack []*open
	values := 0
	where := func() string {
		if len(stack) == 0 {
			return "#"
		}
		top := stack[len(stack)-1]
		if top.n.kind == kindObject && top.hasKey {
			return top.n.child(top.key)
		}
		return top.n.path()
	}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) && doc.root != nil && len(stack) == 0 {
			return doc, nil
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, refuse(where(), "the schema is not valid JSON (%v); send a JSON object such as {\"type\":\"object\"}", err)
		}
		if doc.root != nil && len(stack) == 0 {
			return nil, refuse("#", "unexpected data after the schema; send one JSON value")
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			continue
		}
		var top *open
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.n.kind == kindObject && !top.hasKey {
			key := tok.(string) // the decoder only yields strings in key position
			if err := checkKey(top, key); err != nil {
				return nil, err
			}
			top.key, top.hasKey = key, true
			continue
		}
		values++
		if values > MaxValues {
			return nil, refuseSize(where(), "the schema has more than %d JSON values; simplify it (fewer enum values, fewer properties)", MaxValues)
		}
		n, err := newNode(tok)
		if err != nil {
			return nil, refuse(where(), "%v", err)
		}
		if top != nil {
			n.parent, n.index = top.n, len(top.n.kids)
			top.n.kids = append(top.n.kids, n)
			if top.n.kind == kindObject {
				top.n.keys = append(top.n.keys, top.key)
				top.hasKey = false
				if top.key == "$ref" {
					doc.refs = append(doc.refs, top.n)
				}
			}
		} else {
			doc.root = n
		}
		if n.kind == kindObject || n.kind == kindArray {
			if len(stack)+1 > MaxDepth {
				return nil, refuse(n.path(), "the schema nests deeper than %d levels; flatten it, or move repeated parts into $defs", MaxDepth)
			}
			o := &open{n: n}
			if n.kind == kindObject {
				o.seen = map[string]bool{}
			}
			stack = append(stack, o)
		}
	}
}

func checkKey(o *open, key string) error {
	if len(key) > MaxKeyBytes {
		return refuse(o.n.path(), "the key %.40q... is %d bytes, more than %d; use shorter property and definition names", key, len(key), MaxKeyBytes)
	}
	if strings.IndexByte(key, 0) >= 0 {
		return refuse(o.n.child(key), "the key contains a NUL character (\\u0000), which the grammar engine cannot carry; remove it")
	}
	if o.seen[key] {
		return refuse(o.n.child(key), "the key %q appears twice in one object; keep one", key)
	}
	o.seen[key] = true
	return nil
}

func newNode(tok json.Token) (*node, error) {
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' {
			return &node{kind: kindObject}, nil
		}
		return &node{kind: kindArray}, nil
	case string:
		if strings.IndexByte(v, 0) >= 0 {
			return nil, errors.New("a string contains a NUL character (\\u0000), which the grammar engine cannot carry; remove it")
		}
		return &node{kind: kindString, text: v}, nil
	case json.Number:
		return &node{kind: kindNumber, text: string(v)}, nil
	case bool:
		return &node{kind: kindBool, text: strconv.FormatBool(v)}, nil
	default:
		return &node{kind: kindNull}, nil
	}
}

// encoder writes a tree back as compact JSON, keys in their original order.
type encoder struct {
	buf *bytes.Buffer
	str *json.Encoder
	// rewrite, when set, maps each "$ref" string value before it is written, and objects that
	// hide $refs from the converter are rewritten too (see hidesRefs).
	rewrite func(ref string) string
}

func newEncoder(buf *bytes.Buffer) *encoder {
	e := &encoder{buf: buf, str: json.NewEncoder(buf)}
	e.str.SetEscapeHTML(false) // "<" stays "<": the text is read by the converter, not a browser
	return e
}

func (e *encoder) string(s string) {
	_ = e.str.Encode(s) // a string always encodes; Encode adds a newline
	e.buf.Truncate(e.buf.Len() - 1)
}

// value writes n; recursion is bounded by MaxDepth, which parse enforced.
func (e *encoder) value(n *node) {
	switch n.kind {
	case kindNull:
		e.buf.WriteString("null")
	case kindBool, kindNumber:
		e.buf.WriteString(n.text)
	case kindString:
		e.string(n.text)
	case kindArray:
		e.buf.WriteByte('[')
		for i, k := range n.kids {
			if i > 0 {
				e.buf.WriteByte(',')
			}
			e.value(k)
		}
		e.buf.WriteByte(']')
	case kindObject:
		e.buf.WriteByte('{')
		wrap := e.rewrite != nil && hidesRefs(n)
		for i, k := range n.kids {
			if i > 0 {
				e.buf.WriteByte(',')
			}
			key := n.keys[i]
			switch {
			case key == "$ref" && wrap:
				e.buf.WriteString(`"anyOf":[{"$ref":`)
				e.string(e.rewrite(k.text))
				e.buf.WriteString(`}]`)
			case key == "$ref" && k.kind == kindString && e.rewrite != nil:
				e.buf.WriteString(`"$ref":`)
				e.string(e.rewrite(k.text))
			default:
				e.string(key)
				e.buf.WriteByte(':')
				e.value(k)
			}
		}
		e.buf.WriteByte('}')
	}
}

// hidesRefs reports whether n is an object with a $ref and other keywords that the converter
// would not read. Its resolve_refs does not look inside an object that has a $ref, so the $refs
// in the siblings (typically "$defs" beside a root "$ref", as pydantic writes a recursive model)
// stay unresolved and silently match any value. Written as {"anyOf":[{"$ref":...}], ...} the
// object means the same (the converter reads a one-member anyOf as its member, and ignores the
// siblings either way) and the nested $refs resolve. An object that already has anyOf or oneOf
// is left alone.
func hidesRefs(n *node) bool {
	ref := n.get("$ref")
	return ref != nil && ref.kind == kindString && len(n.keys) > 1 && n.get("anyOf") == nil && n.get("oneOf") == nil
}
