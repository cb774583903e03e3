package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

var (
	weather = Tool{Name: "get_weather", Parameters: json.RawMessage(`{
		"type": "object",
		"properties": {"location": {"type": "string"}, "units": {"enum": ["c", "f"]}},
		"required": ["location"]
	}`)}
	// tree is recursive through $defs, and list through the root: their $refs must move.
	tree = Tool{Name: "tree", Parameters: json.RawMessage(`{"$defs":{"n":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/n"}}}}},"$ref":"#/$defs/n"}`)}
	list = Tool{Name: "list", Parameters: json.RawMessage(`{"type":"object","properties":{"next":{"$ref":"#"}}}`)}
	now  = Tool{Name: "now"}
)

// call is the call object ToolCall writes for one tool, with args as its arguments schema.
func call(name, args string) string {
	return `{"type":"object","properties":{"name":{"const":"` + name + `"},"arguments":` + args +
		`},"required":["name","arguments"],"additionalProperties":false}`
}

const weatherArgs = `{"type":"object","properties":{"location":{"type":"string"},"units":{"enum":["c","f"]}},"required":["location"]}`

func TestToolCall(t *testing.T) {
	tests := []struct {
		name     string
		tools    []Tool
		choice   string
		parallel bool
		want     string
	}{
		{"one tool", []Tool{weather}, "", false, call("get_weather", weatherArgs)},
		{"no parameters", []Tool{now}, "", false, call("now", `{"type":"object"}`)},
		{"null parameters", []Tool{{Name: "now", Parameters: json.RawMessage(" null ")}}, "", false, call("now", `{"type":"object"}`)},
		{"several tools", []Tool{weather, now}, "", false,
			`{"anyOf":[` + call("get_weather", weatherArgs) + `,` + call("now", `{"type":"object"}`) + `]}`},
		{"named tool", []Tool{weather, now}, "now", false, call("now", `{"type":"object"}`)},
		{"parallel", []Tool{weather}, "", true, `{"type":"array","items":` + call("get_weather", weatherArgs) + `,"minItems":1}`},
		{"parallel several", []Tool{now, weather}, "", true,
			`{"type":"array","items":{"anyOf":[` + call("now", `{"type":"object"}`) + `,` + call("get_weather", weatherArgs) + `]},"minItems":1}`},
		{"refs move with one tool", []Tool{tree}, "", false,
			call("tree", `{"$defs":{"n":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/properties/arguments/$defs/n"}}}}},"anyOf":[{"$ref":"#/properties/arguments/$defs/n"}]}`)},
		{"refs move inside anyOf", []Tool{now, tree, list}, "", false,
			`{"anyOf":[` + call("now", `{"type":"object"}`) + `,` +
				call("tree", `{"$defs":{"n":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/anyOf/1/properties/arguments/$defs/n"}}}}},"anyOf":[{"$ref":"#/anyOf/1/properties/arguments/$defs/n"}]}`) + `,` +
				call("list", `{"type":"object","properties":{"next":{"$ref":"#/anyOf/2/properties/arguments"}}}`) + `]}`},
		{"refs move inside items", []Tool{list}, "", true,
			`{"type":"array","items":` + call("list", `{"type":"object","properties":{"next":{"$ref":"#/items/properties/arguments"}}}`) + `,"minItems":1}`},
		{"named tool's refs", []Tool{tree, list}, "list", false,
			call("list", `{"type":"object","properties":{"next":{"$ref":"#/properties/arguments"}}}`)},
		{"a $ref beside other keywords becomes anyOf", []Tool{{Name: "t", Parameters: json.RawMessage(`{"description":"a tree","$defs":{"n":{"type":"object","properties":{"m":{"$ref":"#/$defs/m"},"d":{"$ref":"#/$defs/m","description":"x","anyOf":[{}]}}},"m":{"type":"integer"}},"$ref":"#/$defs/n"}`)}}, "", false,
			call("t", `{"description":"a tree","$defs":{"n":{"type":"object","properties":{"m":{"$ref":"#/properties/arguments/$defs/m"},"d":{"$ref":"#/properties/arguments/$defs/m","description":"x","anyOf":[{}]}}},"m":{"type":"integer"}},"anyOf":[{"$ref":"#/properties/arguments/$defs/n"}]}`)},
		{"strings and numbers kept", []Tool{{Name: `say "<hi>"`, Parameters: json.RawMessage(`{"properties":{"n":{"type":"number","maximum":1.50e3,"description":"<b>é\n"}}}`)}}, "", false,
			call(`say \"<hi>\"`, `{"properties":{"n":{"type":"number","maximum":1.50e3,"description":"<b>é\n"}}}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ToolCall(tt.tools, tt.choice, tt.parallel)
			if err != nil {
				t.Fatalf("ToolCall: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("ToolCall =\n%s\nwant\n%s", got, tt.want)
			}
			if err := Check(got); err != nil {
				t.Errorf("the result fails Check: %v", err)
			}
		})
	}
}

// TestToolCallNameFirst reads every call object of a result in document order: the grammar
// converter lays out properties in that order, so "name" must come before "arguments".
func TestToolCallNameFirst(t *testing.T) {
	got, err := ToolCall([]Tool{weather, tree, list, now}, "", true)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := parse(got)
	if err != nil {
		t.Fatal(err)
	}
	calls := doc.root.get("items").get("anyOf").kids
	if len(calls) != 4 {
		t.Fatalf("%d call objects, want 4", len(calls))
	}
	for i, c := range calls {
		props := c.get("properties")
		if strings.Join(props.keys, ",") != "name,arguments" {
			t.Errorf("call %d has properties %v, want name before arguments", i, props.keys)
		}
		if req := c.get("required"); req.kids[0].text != "name" || req.kids[1].text != "arguments" {
			t.Errorf("call %d requires %v", i, req)
		}
	}
}

func TestToolCallRefuses(t *testing.T) {
	many := make([]Tool, 100)
	for i := range many {
		many[i] = Tool{Name: fmt.Sprintf("t%d", i), Parameters: json.RawMessage(objectWith(60))}
	}
	tests := []struct {
		name   string
		tools  []Tool
		choice string
		tool   string // Error.Tool
		path   string // Error.Path
		want   string
	}{
		{"no tools", nil, "", "", "", "has no tools"},
		{"unknown tool", []Tool{weather, now}, "search", "search", "", `not among the request's tools ("get_weather", "now")`},
		{"unnamed tool", []Tool{{Parameters: json.RawMessage(`{}`)}}, "", "", "", "has no name"},
		{"duplicate names", []Tool{weather, now, weather}, "", "get_weather", "", "two tools have this name"},
		{"invalid JSON", []Tool{{Name: "f", Parameters: json.RawMessage(`{"type":`)}}, "", "f", "#/type", "not valid JSON"},
		{"left recursion", []Tool{now, {Name: "f", Parameters: json.RawMessage(`{"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`)}}, "", "f", "#/$defs/a/anyOf/0", "left recursion"},
		{"boolean parameters", []Tool{{Name: "f", Parameters: json.RawMessage(`true`)}}, "", "f", "#", "must be an object"},
		{"array parameters", []Tool{{Name: "f", Parameters: json.RawMessage(`[]`)}}, "", "f", "#", "the schema is an array"},
		{"only the named tool is vetted", []Tool{{Name: "bad", Parameters: json.RawMessage(`{"$ref":"#"}`)}, now}, "bad", "bad", "#", "left recursion"},
		{"too large together", many, "", "", "#/anyOf/75/properties/arguments/properties/p45", "more than 10000 JSON values"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ToolCall(tt.tools, tt.choice, false)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("ToolCall error = %v, want an *Error", err)
			}
			if e.Tool != tt.tool || e.Path != tt.path || !strings.Contains(e.Reason, tt.want) {
				t.Errorf("got tool %q path %q reason %q; want tool %q path %q reason with %q", e.Tool, e.Path, e.Reason, tt.tool, tt.path, tt.want)
			}
			if !errors.Is(err, ErrSchema) || !errors.Is(err, llm.ErrInvalidInput) {
				t.Errorf("%v matches neither ErrSchema nor llm.ErrInvalidInput", err)
			}
		})
	}
}

// TestToolCallIgnoresUnchosen shows a broken tool does not block forcing another one.
func TestToolCallIgnoresUnchosen(t *testing.T) {
	bad := Tool{Name: "bad", Parameters: json.RawMessage(`{"$ref":"#"}`)}
	got, err := ToolCall([]Tool{bad, now}, "now", false)
	if err != nil {
		t.Fatalf("ToolCall: %v", err)
	}
	if want := call("now", `{"type":"object"}`); string(got) != want {
		t.Errorf("ToolCall = %s, want %s", got, want)
	}
}
