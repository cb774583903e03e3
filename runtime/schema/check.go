package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Check refuses a JSON Schema that is broken or that would crash, hang or overload llama.cpp's
// json-schema-to-grammar converter even after Grammar relaxed it, with an *Error that wraps
// ErrSchema and llm.ErrInvalidInput and names the JSON pointer of the problem. It refuses:
//   - invalid JSON, a root that is neither an object nor a boolean, duplicate keys, NUL characters;
//   - more than MaxBytes, MaxDepth levels, MaxValues values, MaxProperties properties in one
//     object, MaxRefs distinct $refs, keys over MaxKeyBytes, $refs over MaxRefBytes;
//   - a $ref that is not a local JSON pointer ("#" or "#/..."), that uses pointer escapes ("~0",
//     "~1", "%xx", which the converter does not decode), that points at nothing or at a non-schema,
//     or whose rule name would collide with another $ref's in the converter;
//   - left recursion: a chain of $ref / allOf / anyOf / oneOf that reaches the same schema without
//     consuming input (recursion through properties or items is fine);
//   - recursion through allOf, which the converter inlines forever even where it consumes input,
//     and schemas it would expand into more than MaxExpanded visits (see expansion);
//   - malformed keywords: minLength, maxLength, minItems, maxItems that are not whole numbers of
//     at least 0 or whose minimum is above the maximum, a format or pattern that is not a string,
//     and malformed shapes of the keywords the converter reads (type, properties, items, anyOf...).
//
// Limits the grammar engine cannot express are not refused (a count above MaxRepeat, a pattern
// the converter cannot read, a format it does not know): Grammar lists them as Relaxations.
//
// $refs are checked wherever they appear, as the converter resolves every one of them.
func Check(raw json.RawMessage) error {
	_, err := check(raw)
	return err
}

// CheckShown is Check for a schema that is only shown to the model (a tool under tool_choice
// auto): no grammar is built from it, so the grammar engine's size caps (MaxBytes, MaxValues,
// MaxProperties, MaxRefs, MaxExpanded) do not refuse it; a schema past one of them need only be
// JSON with an object or boolean root, of at most MaxShownBytes. A broken schema is still
// refused.
func CheckShown(raw json.RawMessage) error {
	if len(raw) > MaxShownBytes {
		return refuse("#", "the schema is %d bytes, more than the %d MiB a prompt of this server holds; shorten descriptions or send fewer tools", len(raw), MaxShownBytes>>20)
	}
	err := Check(raw)
	var e *Error
	if !errors.As(err, &e) || !e.sizeCap {
		return err
	}
	// Valid JSON whose root is an object or a boolean, read without building it.
	t := bytes.TrimSpace(raw)
	if !json.Valid(t) || len(t) == 0 || t[0] != '{' && t[0] != 't' && t[0] != 'f' {
		return err
	}
	return nil
}

// check parses and vets raw, returning the tree for callers that go on to rewrite it.
func check(raw []byte) (*document, error) {
	doc, _, err := checkTree(raw)
	return doc, err
}

// checkTree is check that also returns the checker, which knows what the grammar cannot express.
func checkTree(raw []byte) (*document, *checker, error) {
	doc, err := parse(raw)
	if err != nil {
		return nil, nil, err
	}
	if k := doc.root.kind; k != kindObject && k != kindBool {
		return nil, nil, refuse("#", "the schema is %s; a JSON Schema is an object (like {\"type\":\"object\"}) or a boolean", k)
	}
	c := &checker{doc: doc, targets: map[string]*node{}, edges: map[*node][]*node{}}
	for _, step := range []func() error{c.resolveRefs, c.walkAll, c.leftRecursion, c.expansion} {
		if err := step(); err != nil {
			return nil, nil, err
		}
	}
	return doc, c, nil
}

type checker struct {
	doc *document
	// targets maps each $ref string to the schema it points at.
	targets map[string]*node
	// edges are the subschemas a schema may continue with before consuming any input: its $ref
	// target and its allOf / anyOf / oneOf members. A cycle here is left recursion.
	edges map[*node][]*node
	// order lists the schemas in the order they were walked, for a deterministic cycle search.
	order []*node
	// relaxed lists the keywords the grammar cannot express, in walk order, and edits what
	// Grammar changes for them.
	relaxed []Relaxation
	edits   []edit
}

// ruleChars is what the converter replaces in a $ref to name its grammar rule.
var ruleChars = regexp.MustCompile(`[^a-zA-Z0-9-]+`)

func (c *checker) resolveRefs() error {
	rules := map[string]string{} // converter rule name → the $ref that took it
	for _, obj := range c.doc.refs {
		v := obj.get("$ref")
		at := v.path()
		if v.kind != kindString {
			return refuse(at, "$ref is %s; it must be a string like \"#/$defs/name\"", v.kind)
		}
		ref := v.text
		if _, ok := c.targets[ref]; ok {
			continue
		}
		if len(ref) > MaxRefBytes {
			return refuse(at, "the $ref is %d bytes, more than %d; use shorter definition names", len(ref), MaxRefBytes)
		}
		if len(c.targets) == MaxRefs {
			return refuseSize(at, "the schema has more than %d different $ref values; inline small definitions or simplify the schema", MaxRefs)
		}
		target, why := c.resolve(ref)
		if why != "" {
			return refuse(at, "$ref %q %s", ref, why)
		}
		if target.kind != kindObject && target.kind != kindBool {
			return refuse(at, "$ref %q points at %s, not a schema; point it at a schema object", ref, target.kind)
		}
		// The converter names a $ref's rule "ref" + the pointer with every run of other
		// characters made "-", and reuses a rule that already has the name: two $refs with one
		// name would silently share one definition.
		name := ruleChars.ReplaceAllString(ref[1:], "-")
		if other, ok := rules[name]; ok {
			return refuse(at, "$ref %q and $ref %q look the same to the grammar converter (it keeps only letters, digits and '-'); rename one of the definitions", ref, other)
		}
		rules[name] = ref
		c.targets[ref] = target
	}
	return nil
}

// resolve follows a local JSON pointer the way the converter does: tokens split at "/", taken
// literally, array elements by index. It returns why it failed, or "".
func (c *checker) resolve(ref string) (*node, string) {
	if ref == "#" {
		return c.doc.root, ""
	}
	if !strings.HasPrefix(ref, "#/") {
		return nil, "is not a local JSON pointer; only references inside this schema (\"#\" or \"#/$defs/name\") are supported, so inline the referenced schema"
	}
	if strings.ContainsAny(ref, "~%") {
		return nil, "uses JSON pointer escapes (~0, ~1 or %xx), which the grammar converter does not decode; rename the definition to avoid '~', '/' and '%'"
	}
	cur := c.doc.root
	for _, tok := range strings.Split(ref[2:], "/") {
		var next *node
		switch cur.kind {
		case kindObject:
			next = cur.get(tok)
		case kindArray:
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(cur.kids) && strconv.Itoa(i) == tok {
				next = cur.kids[i]
			}
		}
		if next == nil {
			return nil, fmt.Sprintf("points at nothing: %s has no %q; add the definition or fix the pointer", cur.path(), tok)
		}
		cur = next
	}
	return cur, ""
}

// walkAll vets every schema the converter can reach: the root, then each $ref target.
func (c *checker) walkAll() error {
	seen := map[*node]bool{}
	if err := c.walk(c.doc.root, seen); err != nil {
		return err
	}
	for _, obj := range c.doc.refs { // document order, for deterministic messages
		if err := c.walk(c.targets[obj.get("$ref").text], seen); err != nil {
			return err
		}
	}
	return nil
}

// walk vets the schema s and the subschemas the converter descends into. Recursion follows the
// JSON nesting only (at most MaxDepth); $ref targets are walked by walkAll.
func (c *checker) walk(s *node, seen map[*node]bool) error {
	if seen[s] {
		return nil
	}
	seen[s] = true
	switch s.kind {
	case kindBool:
		return nil
	case kindObject:
	default:
		return refuse(s.path(), "a schema must be an object or a boolean, not %s", s.kind)
	}
	c.order = append(c.order, s)
	if err := c.checkKeywords(s); err != nil {
		return err
	}
	var subs []*node
	if ref := s.get("$ref"); ref != nil {
		c.edges[s] = append(c.edges[s], c.targets[ref.text])
	}
	for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
		list := s.get(kw)
		if list == nil {
			continue
		}
		if list.kind != kindArray || len(list.kids) == 0 {
			return refuse(list.path(), "%s must be a non-empty array of schemas", kw)
		}
		c.edges[s] = append(c.edges[s], list.kids...)
		subs = append(subs, list.kids...)
	}
	if props := s.get("properties"); props != nil {
		if props.kind != kindObject {
			return refuse(props.path(), "properties must be an object mapping names to schemas, not %s", props.kind)
		}
		if len(props.kids) > MaxProperties {
			return refuseSize(props.path(), "the object has %d properties, more than %d; split it into nested objects", len(props.kids), MaxProperties)
		}
		subs = append(subs, props.kids...)
	}
	if ap := s.get("additionalProperties"); ap != nil {
		subs = append(subs, ap)
	}
	if items := s.get("items"); items != nil {
		if items.kind == kindArray {
			subs = append(subs, items.kids...)
		} else {
			subs = append(subs, items)
		}
	}
	if prefix := s.get("prefixItems"); prefix != nil {
		if prefix.kind != kindArray {
			return refuse(prefix.path(), "prefixItems must be an array of schemas, not %s", prefix.kind)
		}
		subs = append(subs, prefix.kids...)
	}
	for _, sub := range subs {
		if err := c.walk(sub, seen); err != nil {
			return err
		}
	}
	return nil
}

var typeNames = map[string]bool{
	"string": true, "number": true, "integer": true, "boolean": true, "object": true, "array": true, "null": true,
}

// checkKeywords vets the keywords of one schema object that the converter reads as values, and
// notes those it cannot express.
func (c *checker) checkKeywords(s *node) error {
	if t := s.get("type"); t != nil {
		names := []*node{t}
		if t.kind == kindArray {
			if len(t.kids) == 0 {
				return refuse(t.path(), "type is an empty array; name at least one type")
			}
			names = t.kids
		}
		for _, n := range names {
			if n.kind != kindString || !typeNames[n.text] {
				return refuse(n.path(), "type must be one of string, number, integer, boolean, object, array, null (or an array of them)")
			}
		}
	}
	for _, kw := range []string{"format", "pattern"} {
		if v := s.get(kw); v != nil && v.kind != kindString {
			return refuse(v.path(), "%s must be a string, not %s", kw, v.kind)
		}
	}
	if p := s.get("pattern"); p != nil {
		if why := checkPattern(p.text); why != "" {
			c.relax(s, "pattern", why, "")
		}
	}
	if f := s.get("format"); f != nil && !grammarFormats[f.text] {
		c.relax(s, "format", fmt.Sprintf("the grammar engine does not know the format %q", f.text), keep)
	}
	if e := s.get("enum"); e != nil && (e.kind != kindArray || len(e.kids) == 0) {
		return refuse(e.path(), "enum must be a non-empty array of values")
	}
	// A minimum above its maximum makes llama.cpp's grammar parser loop forever.
	for _, pair := range [][2]string{{"minLength", "maxLength"}, {"minItems", "maxItems"}} {
		lo, err := count(s, pair[0])
		if err != nil {
			return err
		}
		hi, err := count(s, pair[1])
		if err != nil {
			return err
		}
		if lo >= 0 && hi >= 0 && lo > hi {
			return refuse(s.child(pair[0]), "%s (%d) is above %s (%d); no value can satisfy both", pair[0], lo, pair[1], hi)
		}
		// A lower bound past the limit is clamped to it: the grammar then admits every value
		// the schema does (and some shorter ones, which the check afterwards reports), where
		// dropping it would let the model stop at any length. An upper bound past the limit is
		// dropped: no bound at or below the limit admits every value the schema does.
		why := "the grammar engine repeats at most %d times"
		if lo > MaxRepeat {
			c.relax(s, pair[0], fmt.Sprintf(why+"; the grammar asks for at least %d", MaxRepeat, MaxRepeat), strconv.Itoa(MaxRepeat))
		}
		if hi > MaxRepeat {
			c.relax(s, pair[1], fmt.Sprintf(why+"; the grammar leaves it out", MaxRepeat), "")
		}
	}
	return nil
}

// count reads a repetition keyword: -1 when absent, else a whole number of at least 0 (values
// past MaxRepeat saturate just above it).
func count(s *node, kw string) (int, error) {
	v := s.get(kw)
	if v == nil {
		return -1, nil
	}
	f, err := strconv.ParseFloat(v.text, 64)
	if v.kind != kindNumber || err != nil || f < 0 || f != math.Trunc(f) {
		return 0, refuse(v.path(), "%s must be a whole number of at least 0", kw)
	}
	if f > math.MaxInt32 {
		return math.MaxInt32, nil
	}
	return int(f), nil
}
