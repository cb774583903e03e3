package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

// nested wraps leaf in n levels of {"type":"object","properties":{"a": ...}}.
func nested(n int, leaf string) string {
	return strings.Repeat(`{"type":"object","properties":{"a":`, n) + leaf + strings.Repeat(`}}`, n)
}

// propertiesPath is the JSON pointer of the schema d levels down in nested(...); it sits at JSON
// depth 2d+1, as each level is two JSON objects (the schema and its properties map).
func propertiesPath(d int) string {
	return "#" + strings.Repeat("/properties/a", d)
}

func enumOf(n int) string {
	vals := make([]string, n)
	for i := range vals {
		vals[i] = fmt.Sprint(i)
	}
	return `{"enum":[` + strings.Join(vals, ",") + `]}`
}

func objectWith(n int) string {
	props := make([]string, n)
	for i := range props {
		props[i] = fmt.Sprintf(`"p%d":{"type":"string"}`, i)
	}
	return `{"type":"object","properties":{` + strings.Join(props, ",") + `}}`
}

// distinctRefs has n definitions and one property referring to each.
func distinctRefs(n int) string {
	defs, props := make([]string, n), make([]string, n)
	for i := range defs {
		defs[i] = fmt.Sprintf(`"d%d":{"type":"string"}`, i)
		props[i] = fmt.Sprintf(`"p%d":{"$ref":"#/$defs/d%d"}`, i, i)
	}
	return `{"$defs":{` + strings.Join(defs, ",") + `},"type":"object","properties":{` + strings.Join(props, ",") + `}}`
}

// sharedAllOf has n levels, each with two properties that inline the next level through allOf:
// the converter visits the last level 2^n times.
func sharedAllOf(n int) string {
	defs := make([]string, n+1)
	for i := range n {
		next := fmt.Sprintf(`{"allOf":[{"$ref":"#/$defs/l%d"}]}`, i+1)
		defs[i] = fmt.Sprintf(`"l%d":{"type":"object","properties":{"a":%s,"b":%s}}`, i, next, next)
	}
	defs[n] = fmt.Sprintf(`"l%d":{"type":"object","properties":{"z":{"type":"string"}}}`, n)
	return `{"$defs":{` + strings.Join(defs, ",") + `},"type":"object","properties":{"root":{"$ref":"#/$defs/l0"}}}`
}

// typeLists nests n schemas that each visit their child twice: once as an object, once as a string.
func typeLists(n int) string {
	return strings.Repeat(`{"type":["object","string"],"allOf":[{"properties":{"a":`, n) + `{}` + strings.Repeat(`}}]}`, n)
}

// refCycle is d0 → d1 → ... → d(n-1) → d0, all through bare $refs.
func refCycle(n int) string {
	defs := make([]string, n)
	for i := range defs {
		defs[i] = fmt.Sprintf(`"d%d":{"$ref":"#/$defs/d%d"}`, i, (i+1)%n)
	}
	return `{"$defs":{` + strings.Join(defs, ",") + `},"$ref":"#/$defs/d0"}`
}

func TestCheckRefuses(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		path   string // the JSON pointer the refusal names
		want   string // a part of the reason
	}{
		// JSON itself.
		{"empty", ``, "#", "not valid JSON"},
		{"syntax", `{"type":"object",}`, "#", "not valid JSON"},
		{"syntax inside", `{"properties":{"a":{"type":}}}`, "#/properties/a/type", "not valid JSON"},
		{"truncated", `{"type":"object"`, "#", "not valid JSON"},
		{"trailing data", `{} {}`, "#", "unexpected data after the schema"},
		{"string root", `"object"`, "#", "the schema is a string"},
		{"array root", `[{"type":"object"}]`, "#", "the schema is an array"},
		{"null root", `null`, "#", "the schema is null"},
		{"duplicate key", `{"type":"object","type":"string"}`, "#/type", `"type" appears twice`},
		{"NUL in a key", `{"properties":{"a\u0000b":{}}}`, "#/properties/a\x00b", "NUL"},
		{"NUL in a string", `{"description":"a\u0000"}`, "#/description", "NUL"},

		// Size.
		{"too many bytes", `{"description":"` + strings.Repeat("x", MaxBytes) + `"}`, "#", "more than the 524288"},
		{"10,000 levels of properties", nested(10000, `{}`), propertiesPath(32), "deeper than 64 levels"},
		{"10,000 levels of arrays", strings.Repeat(`[`, 10000) + strings.Repeat(`]`, 10000), "#" + strings.Repeat("/0", 64), "deeper than 64 levels"},
		{"10,000 levels of anyOf", strings.Repeat(`{"anyOf":[`, 5000) + `{}` + strings.Repeat(`]}`, 5000), "#" + strings.Repeat("/anyOf/0", 32), "deeper than 64 levels"},
		{"too many values", enumOf(MaxValues), "#/enum", "more than 10000 JSON values"},
		{"too many properties", objectWith(MaxProperties + 1), "#/properties", "129 properties, more than 128"},
		{"long key", `{"properties":{"` + strings.Repeat("k", MaxKeyBytes+1) + `":{}}}`, "#/properties", "257 bytes, more than 256"},
		{"too many refs", distinctRefs(MaxRefs + 1), "#/properties/p128/$ref", "more than 128 different $ref"},
		{"long ref", `{"$ref":"#/` + strings.Repeat("a/", 520) + `"}`, "#/$ref", "more than 1024"},

		// $ref.
		{"ref not a string", `{"$ref":5}`, "#/$ref", "$ref is a number"},
		{"remote ref", `{"$ref":"https://example.com/s.json"}`, "#/$ref", "not a local JSON pointer"},
		{"relative file ref", `{"$ref":"other.json#/a"}`, "#/$ref", "not a local JSON pointer"},
		{"anchor ref", `{"$defs":{"a":{"$anchor":"x"}},"$ref":"#x"}`, "#/$ref", "not a local JSON pointer"},
		{"escaped ref", `{"$defs":{"a/b":{}},"$ref":"#/$defs/a~1b"}`, "#/$ref", "escapes"},
		{"percent ref", `{"$defs":{"a b":{}},"$ref":"#/$defs/a%20b"}`, "#/$ref", "escapes"},
		{"missing target", `{"properties":{"a":{"$ref":"#/$defs/nope"}}}`, "#/properties/a/$ref", `# has no "$defs"`},
		{"missing definition", `{"$defs":{"b":{}},"$ref":"#/$defs/a"}`, "#/$ref", `#/$defs has no "a"`},
		{"index out of range", `{"anyOf":[{}],"properties":{"a":{"$ref":"#/anyOf/1"}}}`, "#/properties/a/$ref", `#/anyOf has no "1"`},
		{"index with a leading zero", `{"anyOf":[{}],"properties":{"a":{"$ref":"#/anyOf/00"}}}`, "#/properties/a/$ref", `has no "00"`},
		{"target not a schema", `{"properties":{"a":{"type":"string"},"b":{"$ref":"#/properties/a/type"}}}`, "#/properties/b/$ref", "points at a string"},
		{"ref in data is still resolved", `{"default":{"$ref":"#/nope"}}`, "#/default/$ref", "points at nothing"},
		{"rule name collision", `{"$defs":{"a_b":{},"a.b":{}},"properties":{"x":{"$ref":"#/$defs/a_b"},"y":{"$ref":"#/$defs/a.b"}}}`, "#/properties/y/$ref", "look the same"},

		// Left recursion.
		{"root refers to itself", `{"$ref":"#"}`, "#", "left recursion: # → #"},
		{"definition refers to itself", `{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, "#/$defs/a", "left recursion"},
		{"anyOf pair", `{"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/b"},{"type":"null"}]},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`,
			"#/$defs/b", "#/$defs/a → #/$defs/a/anyOf/0 → #/$defs/b → #/$defs/a"},
		{"allOf through refs", `{"$defs":{"a":{"$ref":"#/$defs/a"}},"allOf":[{"$ref":"#/$defs/a"}]}`, "#/$defs/a", "left recursion"},
		{"oneOf to the root", `{"oneOf":[{"type":"string"},{"$ref":"#"}]}`, "#/oneOf/1", "left recursion: # → #/oneOf/1 → #"},
		{"long cycle", refCycle(100), "#/$defs/d99", "#/$defs/d0 → #/$defs/d1"},
		{"cycle in an unused definition's chain", `{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/a"}]}},"properties":{"x":{"$ref":"#/$defs/a"}}}`, "#/$defs/a/allOf/0", "left recursion"},

		// Inline expansion: allOf members are copied in place, with no memory of a $ref.
		{"recursion through allOf", `{"$defs":{"c":{"type":"object","properties":{"x":{"allOf":[{"$ref":"#/$defs/c"}]}}}},"properties":{"q":{"$ref":"#/$defs/c"}}}`,
			"#/$defs/c/properties/x", "recurses through allOf: #/$defs/c/properties/x → #/$defs/c/properties/x"},
		{"recursion through anyOf in allOf", `{"type":"object","properties":{"x":{"allOf":[{"anyOf":[{"type":"null"},{"$ref":"#"}]}]}}}`,
			"#/properties/x", "recurses through allOf"},
		{"shared allOf", sharedAllOf(14), "#/$defs/l1/properties/a", "more than 10000 subschemas"},
		{"type lists", typeLists(15), "#" + strings.Repeat("/allOf/0/properties/a", 2), "more than 10000 subschemas"},

		// Keyword shapes.
		{"type unknown", `{"type":"text"}`, "#/type", "type must be one of"},
		{"type a number", `{"type":1}`, "#/type", "type must be one of"},
		{"type list member unknown", `{"type":["string","date"]}`, "#/type/1", "type must be one of"},
		{"type empty list", `{"type":[]}`, "#/type", "empty array"},
		{"properties an array", `{"properties":[{"type":"string"}]}`, "#/properties", "properties must be an object"},
		{"property a string", `{"properties":{"a":"string"}}`, "#/properties/a", "a schema must be an object or a boolean, not a string"},
		{"anyOf empty", `{"anyOf":[]}`, "#/anyOf", "non-empty array"},
		{"anyOf an object", `{"anyOf":{"a":{}}}`, "#/anyOf", "non-empty array"},
		{"allOf member a number", `{"allOf":[{},1]}`, "#/allOf/1", "not a number"},
		{"items member a string", `{"items":[{},"x"]}`, "#/items/1", "not a string"},
		{"prefixItems an object", `{"prefixItems":{}}`, "#/prefixItems", "prefixItems must be an array"},
		{"additionalProperties a number", `{"additionalProperties":5}`, "#/additionalProperties", "not a number"},
		{"enum an object", `{"enum":{"a":1}}`, "#/enum", "enum must be a non-empty array"},
		{"enum empty", `{"enum":[]}`, "#/enum", "enum must be a non-empty array"},
		{"format a number", `{"type":"string","format":5}`, "#/format", "format must be a string"},
		{"pattern a number", `{"type":"string","pattern":5}`, "#/pattern", "pattern must be a string"},
		{"minLength above maxLength", `{"type":"string","minLength":5,"maxLength":3}`, "#/minLength", "minLength (5) is above maxLength (3)"},
		{"minItems above maxItems", `{"type":"array","items":{},"minItems":5,"maxItems":2}`, "#/minItems", "minItems (5) is above maxItems (2)"},
		{"negative minLength", `{"type":"string","minLength":-1}`, "#/minLength", "whole number"},
		{"fractional maxLength", `{"type":"string","maxLength":1.5}`, "#/maxLength", "whole number"},
		{"maxItems a string", `{"type":"array","maxItems":"3"}`, "#/maxItems", "whole number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(json.RawMessage(tt.schema))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Check = %v, want an *Error", err)
			}
			if e.Path != tt.path {
				t.Errorf("path = %q, want %q (%v)", e.Path, tt.path, err)
			}
			if !strings.Contains(e.Reason, tt.want) {
				t.Errorf("reason = %q, want it to contain %q", e.Reason, tt.want)
			}
			if !errors.Is(err, ErrSchema) || !errors.Is(err, llm.ErrInvalidInput) {
				t.Errorf("%v matches neither ErrSchema nor llm.ErrInvalidInput", err)
			}
			if !strings.Contains(err.Error(), tt.path) {
				t.Errorf("message %q does not name the path %q", err, tt.path)
			}
		})
	}
}

func TestCheckAccepts(t *testing.T) {
	tests := []struct {
		name   string
		schema string
	}{
		{"true", `true`},
		{"false", `false`},
		{"empty", `{}`},
		{"OpenAI get_weather", `{
			"type": "object",
			"properties": {
				"location": {"type": "string", "description": "City and country e.g. Bogotá, Colombia"},
				"units": {"type": "string", "enum": ["celsius", "fahrenheit"]}
			},
			"required": ["location", "units"],
			"additionalProperties": false
		}`},
		{"OpenAI strict math reasoning", `{
			"type": "object",
			"properties": {
				"steps": {
					"type": "array",
					"items": {
						"type": "object",
						"properties": {"explanation": {"type": "string"}, "output": {"type": "string"}},
						"required": ["explanation", "output"],
						"additionalProperties": false
					}
				},
				"final_answer": {"type": "string"}
			},
			"required": ["steps", "final_answer"],
			"additionalProperties": false
		}`},
		{"OpenAI recursive UI", `{
			"type": "object",
			"properties": {
				"type": {"type": "string", "enum": ["div", "button", "header", "section", "field", "form"]},
				"label": {"type": "string"},
				"children": {"type": "array", "items": {"$ref": "#"}},
				"attributes": {
					"type": "array",
					"items": {
						"type": "object",
						"properties": {"name": {"type": "string"}, "value": {"type": "string"}},
						"required": ["name", "value"],
						"additionalProperties": false
					}
				}
			},
			"required": ["type", "label", "children", "attributes"],
			"additionalProperties": false
		}`},
		{"recursion through properties", `{"type":"object","properties":{"child":{"$ref":"#"}}}`},
		{"linked list in $defs", `{
			"$defs": {
				"node": {
					"type": "object",
					"properties": {"value": {"type": "number"}, "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}},
					"required": ["value", "next"],
					"additionalProperties": false
				}
			},
			"type": "object",
			"properties": {"head": {"$ref": "#/$defs/node"}},
			"required": ["head"]
		}`},
		{"pydantic style", `{
			"$defs": {
				"Address": {"properties": {"street": {"title": "Street", "type": "string"}}, "required": ["street"], "title": "Address", "type": "object"},
				"Role": {"enum": ["admin", "user"], "title": "Role", "type": "string"}
			},
			"properties": {
				"name": {"title": "Name", "type": "string", "minLength": 1, "maxLength": 100},
				"address": {"allOf": [{"$ref": "#/$defs/Address"}], "description": "Home"},
				"role": {"$ref": "#/$defs/Role", "default": "user"},
				"tags": {"items": {"type": "string"}, "type": "array", "minItems": 0, "maxItems": 10},
				"nickname": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null}
			},
			"required": ["name", "address"],
			"title": "User",
			"type": "object"
		}`},
		{"draft-7 definitions", `{"definitions":{"id":{"type":"integer","minimum":1}},"type":"object","properties":{"id":{"$ref":"#/definitions/id"}}}`},
		{"ref into properties and arrays", `{"anyOf":[{"type":"string"},{"type":"object","properties":{"a":{"type":"integer"},"b":{"$ref":"#/anyOf/1/properties/a"}}}],"$defs":{"x":{"$ref":"#/anyOf/0"}}}`},
		{"mutual recursion through items", `{"$defs":{"a":{"type":"array","items":{"$ref":"#/$defs/b"}},"b":{"anyOf":[{"type":"string"},{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`},
		{"shared definition reached twice", `{"$defs":{"s":{"type":"string"}},"allOf":[{"$ref":"#/$defs/s"}],"anyOf":[{"$ref":"#/$defs/s"},{"$ref":"#/$defs/s"}]}`},
		{"nullable type list", `{"type":["string","null"],"pattern":"^[a-z]{2,8}$"}`},
		{"tuple", `{"type":"array","prefixItems":[{"type":"number"},{"type":"string"}],"items":false}`},
		{"date and uuid formats", `{"type":"object","properties":{"d":{"type":"string","format":"date"},"u":{"type":"string","format":"uuid"}}}`},
		{"unknown keywords pass", `{"type":"object","x-vendor":{"$comment":"hi"},"not":{"type":"null"}}`},
		{"pointer escapes outside $ref", `{"properties":{"a/b~c":{"type":"string"}}}`},
		{"counts at the limit", `{"type":"string","minLength":2000,"maxLength":2000}`},
		{"integral float counts", `{"type":"array","minItems":1.0,"maxItems":2e1}`},
		{"depth at the limit", nested(MaxDepth/2-1, `{"properties":{}}`)},
		{"properties at the limit", objectWith(MaxProperties)},
		{"refs at the limit", distinctRefs(MaxRefs)},
		{"values at the limit", enumOf(MaxValues - 2)},
		{"shared allOf within the limit", sharedAllOf(8)},
		{"type lists within the limit", typeLists(12)},
		{"nullable objects nested deep", strings.Repeat(`{"type":["object","null"],"properties":{"a":`, 31) + `{}` + strings.Repeat(`}}`, 31)},
		{"recursion through a plain $ref beside allOf", `{"$defs":{"c":{"type":"object","properties":{"x":{"$ref":"#/$defs/c"},"y":{"allOf":[{"$ref":"#/$defs/d"}]}}},"d":{"properties":{"z":{"type":"string"}}}},"$ref":"#/$defs/c"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := Check(json.RawMessage(tt.schema)); err != nil {
				t.Errorf("Check refused a good schema: %v", err)
			}
		})
	}
}

func TestErrorMessages(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{Path: "#/a", Reason: "r"}, "invalid JSON schema at #/a: r"},
		{&Error{Tool: "f", Path: "#/a", Reason: "r"}, `invalid parameters schema for tool "f" at #/a: r`},
		{&Error{Tool: "f", Reason: "r"}, `tool "f": r`},
		{&Error{Reason: "r"}, "r"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func BenchmarkCheck(b *testing.B) {
	for _, bb := range []struct {
		name   string
		schema string
	}{
		{"10,000 levels", nested(5000, `{}`)},
		{"10,000 enum values", enumOf(MaxValues - 2)},
		{"128 refs", distinctRefs(MaxRefs)},
		{"shared allOf", sharedAllOf(14)},
	} {
		raw := json.RawMessage(bb.schema)
		b.Run(bb.name, func(b *testing.B) {
			for b.Loop() {
				_ = Check(raw)
			}
		})
	}
}
