package chat

// tojson(indent=N) the way HF writes it. The jinja library encodes the
// indented form through a Go map, so object keys come out sorted and <, >
// and & escaped; HF (Python's json.dumps(indent=N, ensure_ascii=False))
// keeps the keys in order and the characters as they are. Llama 3.1, 3.2
// and 3.3 list their tools with {{ t | tojson(indent=4) }}, so the
// difference would reach every tool prompt of those models. The library's
// filters cannot be replaced, so Parse rewrites that expression into a call
// of a function the environment provides.

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/ardanlabs/jinja"
)

// indentedJSONFunc is the environment's name for the function.
const indentedJSONFunc = "__superfluid_tojson_indent"

// tojsonIndent matches a whole expression that pipes a variable (dotted or
// subscripted, no operators: a filter binds tighter than any operator, so
// only then is the whole expression the filter's operand) to
// tojson(indent=N).
var tojsonIndent = regexp.MustCompile(`^(\s*)([A-Za-z_]\w*(?:\.[A-Za-z_]\w*|\[[^\[\]]*\])*)\s*\|\s*tojson\s*\(\s*indent\s*=\s*(\d+)\s*\)(\s*)$`)

// rewriteTojson returns the content of an expression tag with
// "x | tojson(indent=N)" turned into a call of indentedJSONFunc; any other
// expression comes back unchanged.
func rewriteTojson(expr string) string {
	m := tojsonIndent.FindStringSubmatch(expr)
	if m == nil {
		return expr
	}
	return m[1] + indentedJSONFunc + "(" + m[2] + ", " + m[3] + ")" + m[4]
}

// indentedJSON is the function behind indentedJSONFunc: its arguments are
// the value and the indent width.
var indentedJSON = jinja.NewCallable(indentedJSONFunc, func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 2 || !args[1].IsInt() {
		return jinja.NewString(""), nil
	}
	var compact strings.Builder
	writeJSON(&compact, args[0])
	var out bytes.Buffer
	if err := json.Indent(&out, []byte(compact.String()), "", strings.Repeat(" ", int(args[1].AsInt()))); err != nil {
		return jinja.NewString(""), err
	}
	return jinja.NewString(out.String()), nil
})

// writeJSON writes v as compact JSON, object keys in order, strings
// unescaped beyond what JSON requires, numbers as Python writes them.
func writeJSON(b *strings.Builder, v jinja.Value) {
	switch {
	case v.IsBool():
		b.WriteString(strconv.FormatBool(v.AsBool()))
	case v.IsInt():
		b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		b.WriteString(pythonFloat(v.AsFloat()))
	case v.IsString():
		b.WriteString(jsonString(v.AsString()))
	case v.IsList():
		b.WriteByte('[')
		for i, item := range v.AsList().Items {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, item)
		}
		b.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		b.WriteByte('{')
		for i, key := range d.Keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(jsonString(key))
			b.WriteByte(':')
			writeJSON(b, d.Data[key])
		}
		b.WriteByte('}')
	default: // None, undefined, callables
		b.WriteString("null")
	}
}

// pythonFloat formats f as Python's repr does: fixed notation with at
// least one decimal from 1e-4 up to 1e16, exponent notation outside.
// JSON has no NaN or infinities; Python writes them bare, as here.
func pythonFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	if a := math.Abs(f); a != 0 && (a < 1e-4 || a >= 1e16) {
		return strconv.FormatFloat(f, 'e', -1, 64)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}
