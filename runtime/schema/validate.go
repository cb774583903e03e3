package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"net/mail"
	"net/url"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Violation is a place where a value breaks its schema.
type Violation struct {
	// Path is the JSON pointer of the offending part of the value ("" is the whole value).
	Path    string
	Keyword string
	Reason  string
}

func (v Violation) String() string {
	path := v.Path
	if path == "" {
		path = "/"
	}
	return fmt.Sprintf("%s: %s", path, v.Reason)
}

// maxValidateDepth bounds the validator's recursion ($refs that consume input recurse once per
// level of the value, which the JSON decoder caps at 10,000 levels).
const maxValidateDepth = 512

// maxValidateSteps bounds the schemas Validate applies, all values together. A $ref is
// checked again wherever it is used, and anyOf tries every member on a value that breaks
// them all, so shared definitions nested in anyOf cost 2^depth (22 levels, 1.5 KB of
// schema, took 12 s for one string; 40 would run for days). A step costs about 2 µs.
const maxValidateSteps = 1_000_000

// ErrValidateBudget is returned, with the violations found so far, when a value and schema
// need more than maxValidateSteps checks.
var ErrValidateBudget = fmt.Errorf("the value was not checked whole: its schema applies more than %d times (shared definitions under anyOf)", maxValidateSteps)

// Validate checks the JSON text value against the schema raw (which passed Check) and returns
// where it breaks it, for the output of a grammar that could not express all of raw. It knows
// the keywords the converter reads and the assertions of the common drafts: type, enum, const,
// properties, required, additionalProperties, items, prefixItems, min/maxItems,
// min/maxLength (in characters), pattern (Go's regexp), format (those in checkedFormats),
// minimum, maximum, exclusiveMinimum, exclusiveMaximum, min/maxProperties, allOf, anyOf, oneOf
// (as anyOf) and local $refs; it ignores the others. An error means value is not JSON or raw is
// not a schema Check passes, or ErrValidateBudget: the check stopped part way.
func Validate(raw json.RawMessage, value []byte) ([]Violation, error) {
	doc, err := check(raw)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the value is not JSON: %w", err)
	}
	val := &validator{c: &checker{doc: doc}, patterns: map[string]*regexp.Regexp{}, values: map[*node]any{}, enums: map[*node][]any{}}
	var out []Violation
	val.check(doc.root, v, "", 0, &out)
	if val.steps > maxValidateSteps {
		return out, ErrValidateBudget
	}
	return out, nil
}

type validator struct {
	c        *checker
	patterns map[string]*regexp.Regexp // nil entry: does not compile
	steps    int                       // schemas applied so far (see maxValidateSteps)
	values   map[*node]any             // the schema's enum and const values, decoded
	enums    map[*node][]any           // each enum's values, decoded
}

func (val *validator) check(s *node, v any, at string, depth int, out *[]Violation) {
	if depth > maxValidateDepth {
		return
	}
	if val.steps++; val.steps > maxValidateSteps {
		return
	}
	add := func(kw, format string, args ...any) {
		*out = append(*out, Violation{Path: at, Keyword: kw, Reason: kw + " " + fmt.Sprintf(format, args...)})
	}
	if s.kind == kindBool {
		if s.text == "false" {
			add("false", "schema: no value is allowed here")
		}
		return
	}
	if ref := s.get("$ref"); ref != nil && ref.kind == kindString {
		if target, why := val.c.resolve(ref.text); why == "" {
			val.check(target, v, at, depth+1, out)
		}
	}
	if t := s.get("type"); t != nil && !typeMatches(t, v) {
		add("type", "is %s, but the value is %s", t.text+typeList(t), jsonType(v))
		return // the other keywords would only repeat it
	}
	if e := s.get("enum"); e != nil && e.kind == kindArray {
		val.steps += len(e.kids) / 16 // a comparison costs about a sixteenth of a step
		if !val.oneOfValues(e, v) {
			add("enum", "does not list the value")
		}
	}
	if c := s.get("const"); c != nil && !val.equalJSON(c, v) {
		add("const", "is not the value")
	}
	for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
		list := s.get(kw)
		if list == nil || list.kind != kindArray {
			continue
		}
		var best []Violation
		bestCost := 0
		for i, m := range list.kids {
			var got []Violation
			val.check(m, v, at, depth+1, &got)
			if kw == "allOf" {
				*out = append(*out, got...)
				continue
			}
			if len(got) == 0 {
				best = nil
				break
			}
			if c := cost(got, at); i == 0 || c < bestCost {
				best, bestCost = got, c
			}
		}
		*out = append(*out, best...) // the member it came closest to
	}
	switch v := v.(type) {
	case string:
		val.checkString(s, v, add)
	case json.Number:
		checkNumber(s, v, add)
	case []any:
		val.checkArray(s, v, at, depth, out, add)
	case map[string]any:
		val.checkObject(s, v, at, depth, out, add)
	}
}

// cost ranks a member's violations for reporting the member a value came closest to: a value
// of the wrong type is farther than one that breaks a few limits.
func cost(vs []Violation, at string) int {
	n := len(vs)
	for _, v := range vs {
		if v.Keyword == "type" && v.Path == at {
			n += 1000
		}
	}
	return n
}

type adder func(kw, format string, args ...any)

func (val *validator) checkString(s *node, v string, add adder) {
	n := utf8.RuneCountInString(v)
	if lo, _ := count(s, "minLength"); lo >= 0 && n < lo {
		add("minLength", "is %s, but the string has %d characters", s.get("minLength").text, n)
	}
	if hi, _ := count(s, "maxLength"); hi >= 0 && n > hi {
		add("maxLength", "is %s, but the string has %d characters", s.get("maxLength").text, n)
	}
	if p := s.get("pattern"); p != nil && p.kind == kindString {
		re, ok := val.patterns[p.text]
		if !ok {
			re, _ = regexp.Compile(p.text)
			val.patterns[p.text] = re
		}
		if re != nil && !re.MatchString(v) {
			add("pattern", "%q does not match the string", p.text)
		}
	}
	if f := s.get("format"); f != nil && f.kind == kindString {
		if ok := checkedFormats[f.text]; ok != nil && !ok(v) {
			add("format", "%q does not match the string", f.text)
		}
	}
}

func checkNumber(s *node, v json.Number, add adder) {
	x, ok := new(big.Float).SetString(string(v))
	if !ok {
		return
	}
	bound := func(kw string, bad func(c int) bool) {
		b := s.get(kw)
		if b == nil || b.kind != kindNumber {
			return
		}
		if y, ok := new(big.Float).SetString(b.text); ok && bad(x.Cmp(y)) {
			add(kw, "is %s, but the value is %s", b.text, v)
		}
	}
	bound("minimum", func(c int) bool { return c < 0 })
	bound("maximum", func(c int) bool { return c > 0 })
	bound("exclusiveMinimum", func(c int) bool { return c <= 0 })
	bound("exclusiveMaximum", func(c int) bool { return c >= 0 })
}

func (val *validator) checkArray(s *node, v []any, at string, depth int, out *[]Violation, add adder) {
	if lo, _ := count(s, "minItems"); lo >= 0 && len(v) < lo {
		add("minItems", "is %s, but the array has %d items", s.get("minItems").text, len(v))
	}
	if hi, _ := count(s, "maxItems"); hi >= 0 && len(v) > hi {
		add("maxItems", "is %s, but the array has %d items", s.get("maxItems").text, len(v))
	}
	var prefix []*node
	if p := s.get("prefixItems"); p != nil && p.kind == kindArray {
		prefix = p.kids
	}
	items := s.get("items")
	if items != nil && items.kind == kindArray { // draft 7 tuples
		prefix, items = items.kids, nil
	}
	for i, item := range v {
		sub := items
		if i < len(prefix) {
			sub = prefix[i]
		}
		if sub != nil {
			val.check(sub, item, at+"/"+strconv.Itoa(i), depth+1, out)
		}
	}
}

func (val *validator) checkObject(s *node, v map[string]any, at string, depth int, out *[]Violation, add adder) {
	if req := s.get("required"); req != nil && req.kind == kindArray {
		for _, k := range req.kids {
			if _, ok := v[k.text]; k.kind == kindString && !ok {
				add("required", "names %q, which the object lacks", k.text)
			}
		}
	}
	for _, pair := range [][2]string{{"minProperties", "<"}, {"maxProperties", ">"}} {
		b := s.get(pair[0])
		if b == nil {
			continue
		}
		if n, err := strconv.Atoi(b.text); err == nil && (pair[1] == "<" && len(v) < n || pair[1] == ">" && len(v) > n) {
			add(pair[0], "is %d, but the object has %d properties", n, len(v))
		}
	}
	props := s.get("properties")
	extra := s.get("additionalProperties")
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		here := at + "/" + escapeToken(k)
		if props != nil && props.kind == kindObject {
			if sub := props.get(k); sub != nil {
				val.check(sub, v[k], here, depth+1, out)
				continue
			}
		}
		if extra != nil {
			if extra.kind == kindBool && extra.text == "false" {
				*out = append(*out, Violation{Path: here, Keyword: "additionalProperties", Reason: "additionalProperties is false, but the object has this property"})
				continue
			}
			val.check(extra, v[k], here, depth+1, out)
		}
	}
}

// typeMatches reports whether v is of the type (or one of the types) t names.
func typeMatches(t *node, v any) bool {
	names := []*node{t}
	if t.kind == kindArray {
		names = t.kids
	}
	for _, n := range names {
		switch got := jsonType(v); {
		case n.text == got, n.text == "number" && got == "integer":
			return true
		}
	}
	return false
}

func typeList(t *node) string {
	if t.kind != kindArray {
		return ""
	}
	var names []string
	for _, n := range t.kids {
		names = append(names, n.text)
	}
	return strings.Join(names, " or ")
}

// jsonType names v's JSON type; a number without a fraction is an integer, as the drafts say.
func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if f, ok := new(big.Float).SetString(string(v)); ok && f.IsInt() {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	default:
		return "object"
	}
}

func (val *validator) oneOfValues(enum *node, v any) bool {
	list, ok := val.enums[enum]
	if !ok {
		for _, n := range enum.kids {
			list = append(list, val.decode(n))
		}
		val.enums[enum] = list
	}
	for _, w := range list {
		if w != errNoValue && sameValue(w, v) {
			return true
		}
	}
	return false
}

// equalJSON reports whether the schema's value n equals v (numbers compared by value). Each
// schema value is decoded once per Validate: an enum checked on every item of an array (5,000
// values, 2,000 items) took 34 s when it was decoded on every comparison.
func (val *validator) equalJSON(n *node, v any) bool {
	w := val.decode(n)
	return w != errNoValue && sameValue(w, v)
}

// decode is the schema value n as Go values (errNoValue when it does not decode).
func (val *validator) decode(n *node) any {
	w, ok := val.values[n]
	if !ok {
		var buf bytes.Buffer
		newEncoder(&buf).value(n)
		dec := json.NewDecoder(&buf)
		dec.UseNumber()
		if dec.Decode(&w) != nil {
			w = errNoValue
		}
		val.values[n] = w
	}
	return w
}

// errNoValue marks a schema value that does not decode (never equal to any value).
var errNoValue = fmt.Errorf("no value")

func sameValue(a, b any) bool {
	x, ok1 := a.(json.Number)
	y, ok2 := b.(json.Number)
	if ok1 && ok2 {
		fx, ok1 := new(big.Float).SetString(string(x))
		fy, ok2 := new(big.Float).SetString(string(y))
		return ok1 && ok2 && fx.Cmp(fy) == 0
	}
	switch a := a.(type) {
	case string:
		b, ok := b.(string)
		return ok && a == b
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !sameValue(a[i], b[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, av := range a {
			bv, ok := b[k]
			if !ok || !sameValue(av, bv) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

var (
	uuidRe     = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	hostnameRe = regexp.MustCompile(`^(?i:[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.(?i:[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?))*$`)
)

// checkedFormats are the formats Validate checks, each by what Go's standard library parses.
var checkedFormats = map[string]func(string) bool{
	"date":      func(s string) bool { _, err := time.Parse("2006-01-02", s); return err == nil },
	"date-time": func(s string) bool { _, err := time.Parse(time.RFC3339Nano, s); return err == nil },
	"time": func(s string) bool {
		_, err := time.Parse("15:04:05Z07:00", s)
		_, err2 := time.Parse("15:04:05.999999999Z07:00", s)
		return err == nil || err2 == nil
	},
	"uuid":  uuidRe.MatchString,
	"email": func(s string) bool { a, err := mail.ParseAddress(s); return err == nil && a.Address == s },
	"uri": func(s string) bool {
		u, err := url.Parse(s)
		return err == nil && u.Scheme != ""
	},
	"ipv4": func(s string) bool {
		ip := net.ParseIP(s)
		return ip != nil && ip.To4() != nil && !strings.Contains(s, ":")
	},
	"ipv6":     func(s string) bool { ip := net.ParseIP(s); return ip != nil && strings.Contains(s, ":") },
	"hostname": func(s string) bool { return len(s) <= 253 && hostnameRe.MatchString(s) },
}
