package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestGrammarRelaxes: what the grammar engine cannot express is never refused; Grammar leaves
// it out (or clamps a lower bound) and names it, and what it returns needs no further edits.
func TestGrammarRelaxes(t *testing.T) {
	tests := []struct {
		name, schema string
		grammar      string // the schema the grammar gets
		path, kw     string // the first relaxation
		checked      bool
	}{
		{"maxLength beyond the limit (Claude Code's Workflow)", `{"type":"object","properties":{"script":{"type":"string","maxLength":524288}}}`,
			`{"type":"object","properties":{"script":{"type":"string"}}}`, "#/properties/script/maxLength", "maxLength", true},
		{"maxItems beyond the limit", `{"type":"array","maxItems":5000,"items":{"type":"integer"}}`,
			`{"type":"array","items":{"type":"integer"}}`, "#/maxItems", "maxItems", true},
		{"minLength beyond the limit is clamped", `{"type":"string","minLength":3000}`,
			`{"type":"string","minLength":2000}`, "#/minLength", "minLength", true},
		{"minItems huge is clamped", `{"type":"array","minItems":1e20}`,
			`{"type":"array","minItems":2000}`, "#/minItems", "minItems", true},
		{"pattern unanchored", `{"type":"string","pattern":"[a-z]+"}`, `{"type":"string"}`, "#/pattern", "pattern", true},
		{"pattern crash", `{"type":"object","properties":{"id":{"type":"string","pattern":"^(?:[a-z]+)$"}}}`,
			`{"type":"object","properties":{"id":{"type":"string"}}}`, "#/properties/id/pattern", "pattern", true},
		{"pattern loop", `{"type":"string","pattern":"^a]$"}`, `{"type":"string"}`, "#/pattern", "pattern", true},
		{"pattern in a ref target inside data", `{"examples":[{"type":"string","pattern":"^*$"}],"$ref":"#/examples/0"}`,
			`{"examples":[{"type":"string"}],"$ref":"#/examples/0"}`, "#/examples/0/pattern", "pattern", true},
		{"pattern in items", `{"type":"array","items":{"type":"string","pattern":"^(a?)+$"}}`,
			`{"type":"array","items":{"type":"string"}}`, "#/items/pattern", "pattern", true},
		{"pattern with a backreference", `{"type":"string","pattern":"^(a)\\1$"}`, `{"type":"string"}`, "#/pattern", "pattern", false},
		{"pattern with \\d", `{"type":"string","pattern":"^\\d{3}$"}`, `{"type":"string"}`, "#/pattern", "pattern", true},
		{"pattern with \\s in a class", `{"type":"string","pattern":"^[\\s\\S]{0,10}$"}`, `{"type":"string"}`, "#/pattern", "pattern", true},
		{"pattern count beyond Go's limit too", `{"type":"string","pattern":"^a{1,5000}$"}`, `{"type":"string"}`, "#/pattern", "pattern", false},
		{"format it does not know, checked", `{"type":"string","format":"uri"}`, `{"type":"string","format":"uri"}`, "#/format", "format", true},
		{"format nobody knows", `{"type":"string","format":"x-color"}`, `{"type":"string","format":"x-color"}`, "#/format", "format", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := Check(json.RawMessage(tt.schema)); err != nil {
				t.Fatalf("Check refused it: %v", err)
			}
			got, relaxed, err := Grammar(json.RawMessage(tt.schema))
			if err != nil {
				t.Fatalf("Grammar: %v", err)
			}
			if string(got) != tt.grammar {
				t.Errorf("grammar schema = %s, want %s", got, tt.grammar)
			}
			if len(relaxed) == 0 {
				t.Fatalf("no relaxation")
			}
			if r := relaxed[0]; r.Path != tt.path || r.Keyword != tt.kw || r.Checked != tt.checked {
				t.Errorf("relaxation = %+v, want path %s keyword %s checked %v", r, tt.path, tt.kw, tt.checked)
			}
			if _, _, edits, err := checkEdits(got); err != nil || len(edits) > 0 {
				t.Errorf("the grammar schema still needs edits %v (%v)", edits, err)
			}
		})
	}
}

// TestGrammarUnchanged: a schema the grammar expresses whole comes back as it was.
func TestGrammarUnchanged(t *testing.T) {
	raw := json.RawMessage(`{"type": "string", "maxLength": 2000, "pattern": "^[a-z\\]]+$", "format": "date"}`)
	got, relaxed, err := Grammar(raw)
	if err != nil || len(relaxed) > 0 || string(got) != string(raw) {
		t.Errorf("Grammar = %s, %v, %v; want the schema unchanged", got, relaxed, err)
	}
}

// TestToolCallGrammarRelaxes: a forced call's grammar leaves out what it cannot express and
// names the tool; the client's paths stay those of the tool's own parameters.
func TestToolCallGrammarRelaxes(t *testing.T) {
	wf := Tool{Name: "Workflow", Parameters: json.RawMessage(`{"type":"object","properties":{"script":{"type":"string","maxLength":524288}},"required":["script"]}`)}
	got, relaxed, err := ToolCallGrammar([]Tool{wf, now}, "", false)
	if err != nil {
		t.Fatalf("ToolCallGrammar: %v", err)
	}
	if strings.Contains(string(got), "524288") {
		t.Errorf("the grammar still holds maxLength 524288: %s", got)
	}
	if len(relaxed) != 1 || relaxed[0].Tool != "Workflow" || relaxed[0].Path != "#/properties/script/maxLength" {
		t.Errorf("relaxed = %+v", relaxed)
	}
}

// TestClaudeCodeTools: every tool of Claude Code's captured first request passes Check, and a
// call forced to any of them gets a grammar schema.
func TestClaudeCodeTools(t *testing.T) {
	raw, err := os.ReadFile("../../server/anthropic/testdata/agents/claude-code-2.1.332-first.json")
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		t.Fatal(err)
	}
	if len(req.Tools) < 20 {
		t.Fatalf("the fixture has %d tools", len(req.Tools))
	}
	var tools []Tool
	for _, tool := range req.Tools {
		if err := Check(tool.InputSchema); err != nil {
			t.Errorf("tool %s: %v", tool.Name, err)
		}
		tools = append(tools, Tool{Name: tool.Name, Parameters: tool.InputSchema})
	}
	for _, tool := range tools {
		if _, _, err := ToolCallGrammar(tools, tool.Name, false); err != nil {
			t.Errorf("force %s: %v", tool.Name, err)
		}
	}
}

// TestValidate: the output of a relaxed grammar is checked against the full schema.
func TestValidate(t *testing.T) {
	tests := []struct {
		name, schema, value string
		want                []string // "path keyword"
	}{
		{"maxLength", `{"type":"object","properties":{"script":{"type":"string","maxLength":3}}}`, `{"script":"abcd"}`, []string{"/script maxLength"}},
		{"maxLength in characters", `{"type":"string","maxLength":2}`, `"éé"`, nil},
		{"minLength", `{"type":"string","minLength":3000}`, `"ab"`, []string{" minLength"}},
		{"maxItems", `{"type":"array","maxItems":1}`, `[1,2]`, []string{" maxItems"}},
		{"minItems", `{"type":"array","items":{"type":"integer"},"minItems":2}`, `[1]`, []string{" minItems"}},
		{"pattern", `{"type":"object","properties":{"id":{"type":"string","pattern":"^\\d{3}$"}}}`, `{"id":"12a"}`, []string{"/id pattern"}},
		{"pattern matches anywhere", `{"type":"string","pattern":"b"}`, `"abc"`, nil},
		{"pattern Go cannot compile is skipped", `{"type":"string","pattern":"^(a)\\1$"}`, `"ab"`, nil},
		{"format", `{"type":"string","format":"uri"}`, `"not a uri"`, []string{" format"}},
		{"format ok", `{"type":"string","format":"date-time"}`, `"2026-12-01T11:00:00Z"`, nil},
		{"unknown format is ignored", `{"type":"string","format":"x-color"}`, `"red"`, nil},
		{"type", `{"type":"object","properties":{"n":{"type":"integer"}}}`, `{"n":1.5}`, []string{"/n type"}},
		{"integer written 2.0", `{"type":"integer"}`, `2.0`, nil},
		{"required", `{"type":"object","required":["a"]}`, `{}`, []string{" required"}},
		{"additionalProperties", `{"type":"object","properties":{},"additionalProperties":false}`, `{"x/y":1}`, []string{"/x~1y additionalProperties"}},
		{"enum", `{"enum":["a",1]}`, `1.0`, nil},
		{"enum miss", `{"enum":["a",1]}`, `"b"`, []string{" enum"}},
		{"const", `{"const":{"a":[1]}}`, `{"a":[1]}`, nil},
		{"anyOf picks the closest", `{"anyOf":[{"type":"integer"},{"type":"string","maxLength":1}]}`, `"ab"`, []string{" maxLength"}},
		{"anyOf matched", `{"anyOf":[{"type":"integer"},{"type":"string"}]}`, `"ab"`, nil},
		{"ref", `{"$defs":{"s":{"type":"string","maxLength":1}},"type":"array","items":{"$ref":"#/$defs/s"}}`, `["a","bc"]`, []string{"/1 maxLength"}},
		{"tuple", `{"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"integer"}}`, `["a","b"]`, []string{"/1 type"}},
		{"numbers", `{"type":"number","minimum":1,"exclusiveMaximum":2}`, `2`, []string{" exclusiveMaximum"}},
		{"false schema", `{"properties":{"a":false}}`, `{"a":1}`, []string{"/a false"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Validate(json.RawMessage(tt.schema), []byte(tt.value))
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			var short []string
			for _, v := range got {
				short = append(short, v.Path+" "+v.Keyword)
				if !strings.Contains(v.Reason, v.Keyword) {
					t.Errorf("reason %q does not name the keyword %s", v.Reason, v.Keyword)
				}
			}
			if strings.Join(short, ",") != strings.Join(tt.want, ",") {
				t.Errorf("violations = %q (%v), want %q", short, got, tt.want)
			}
		})
	}
	if _, err := Validate(json.RawMessage(`{}`), []byte(`{"a":`)); err == nil {
		t.Error("Validate took a value that is not JSON")
	}
}

// TestFormatOrCall: a response format beside tools gives the anyOf of the format and a call,
// each with its $refs moved to its place and its limits relaxed.
func TestFormatOrCall(t *testing.T) {
	format := json.RawMessage(`{"$defs":{"s":{"type":"string","maxLength":9000}},"type":"object","properties":{"a":{"$ref":"#/$defs/s"}}}`)
	tool := Tool{Name: "f", Parameters: json.RawMessage(`{"$defs":{"x":{"type":"integer"}},"type":"object","properties":{"n":{"$ref":"#/$defs/x"}}}`)}
	got, relaxed, err := FormatOrCall(format, []Tool{tool}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"anyOf":[{"$defs":{"s":{"type":"string"}},"type":"object","properties":{"a":{"$ref":"#/anyOf/0/$defs/s"}}},` +
		`{"type":"object","properties":{"name":{"const":"f"},"arguments":{"$defs":{"x":{"type":"integer"}},"type":"object","properties":{"n":{"$ref":"#/anyOf/1/properties/arguments/$defs/x"}}}},"required":["name","arguments"],"additionalProperties":false}]}`
	if string(got) != want {
		t.Errorf("FormatOrCall =\n%s\nwant\n%s", got, want)
	}
	if len(relaxed) != 1 || relaxed[0].Path != "#/$defs/s/maxLength" || relaxed[0].Tool != "" {
		t.Errorf("relaxed = %+v", relaxed)
	}
}

// TestCheckShownBounds: a schema only shown to the model passes the grammar's size caps, but
// not MaxShownBytes (no prompt that holds it is served), and a big one is vetted without
// building it in memory (unmarshalling 2 MiB of enum into Go values allocated 80 MB).
func TestCheckShownBounds(t *testing.T) {
	wide := func(n int) json.RawMessage {
		return json.RawMessage(`{"type":"object","enum":[` + strings.Repeat("7,", n/2) + `7]}`)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := CheckShown(wide(2 << 20)); err != nil {
		t.Errorf("CheckShown(2 MiB) = %v, want nil", err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Errorf("CheckShown(2 MiB) allocated %d MB, want a few", got>>20)
	}
	if err := CheckShown(wide(MaxShownBytes + 1)); !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), "MiB a prompt") {
		t.Errorf("CheckShown(past MaxShownBytes) = %v, want a refusal", err)
	}
	for _, bad := range []string{`[` + strings.Repeat("0,", MaxBytes) + `0]`, `{"a":` + strings.Repeat("0,", MaxBytes)} {
		if err := CheckShown(json.RawMessage(bad)); !errors.Is(err, ErrSchema) {
			t.Errorf("CheckShown(%.20s...) = %v, want a refusal", bad, err)
		}
	}
}

// TestValidateBudget: shared definitions nested in anyOf (40 levels, each member a $ref to the
// next; 2.5 KB that Check passes, and whose grammar visits each once) make Validate try 2^40
// paths on a value that breaks the bottom one's relaxed format; it stops at its budget and
// says so (it ran 12 s at 22 levels, days at 40).
func TestValidateBudget(t *testing.T) {
	var defs []string
	for i := range 40 {
		defs = append(defs, fmt.Sprintf(`"d%d":{"anyOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, `"d40":{"type":"string","format":"email"}`)
	raw := json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/$defs/d0"}},"required":["a"],"$defs":{` + strings.Join(defs, ",") + `}}`)
	if _, relaxed, err := Grammar(raw); err != nil || len(relaxed) != 1 {
		t.Fatalf("Grammar = %v, %v; want the format relaxed", relaxed, err)
	}
	start := time.Now()
	_, err := Validate(raw, []byte(`{"a":"x"}`))
	if !errors.Is(err, ErrValidateBudget) {
		t.Errorf("Validate = %v, want ErrValidateBudget", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Validate took %v, want about a second", d)
	}
	// Within the budget the same shape is checked whole.
	small := raw2(defs[30:])
	if vs, err := Validate(json.RawMessage(small), []byte(`{"a":"x"}`)); err != nil || len(vs) != 1 || vs[0].Keyword != "format" {
		t.Errorf("10 levels: Validate = %v, %v; want the format's violation", vs, err)
	}
}

func raw2(defs []string) string {
	return `{"type":"object","properties":{"a":{"$ref":"#/$defs/d30"}},"required":["a"],"$defs":{` + strings.Join(defs, ",") + `}}`
}

// TestValidateEnumItems: an enum checked on every item of an array decodes its values once
// (5,000 values on 2,000 items took 34 s when each comparison decoded its value again).
func TestValidateEnumItems(t *testing.T) {
	var enum []string
	for i := range 5000 {
		enum = append(enum, fmt.Sprintf(`"v%d"`, i))
	}
	raw := json.RawMessage(`{"type":"array","maxItems":5000,"items":{"enum":[` + strings.Join(enum, ",") + `,7,{"a":[1]}]}}`)
	value := `[` + strings.Repeat(`"v4999",`, 2000) + `7.0,{"a":[1e0]},"w"]`
	start := time.Now()
	vs, err := Validate(raw, []byte(value))
	if err != nil || len(vs) != 1 || vs[0].Path != "/2002" || vs[0].Keyword != "enum" {
		t.Errorf("Validate = %v, %v; want only /2002 outside the enum", vs, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Validate took %v, want well under a second", d)
	}
}
