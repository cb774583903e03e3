package core

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

// TestParseAdapters: the lora extension reads into adapter refs with empty paths (the core
// fills them): absent and null are nil (the model's active adapters), [] is empty but not nil
// (none), scale defaults to 1; a bad shape, a missing id or a non-number scale is refused
// naming the element.
func TestParseAdapters(t *testing.T) {
	for _, tt := range []struct {
		raw  string
		want []llm.AdapterRef
		err  string
	}{
		{``, nil, ""},
		{`null`, nil, ""},
		{`[]`, []llm.AdapterRef{}, ""},
		{`[{"id":"pirate"}]`, []llm.AdapterRef{{ID: "pirate", Scale: 1}}, ""},
		{`[{"id":"pirate","scale":0.5},{"id":"poet","scale":-2,"extra":true}]`, []llm.AdapterRef{{ID: "pirate", Scale: 0.5}, {ID: "poet", Scale: -2}}, ""},
		{`[{"id":"pirate","scale":null}]`, []llm.AdapterRef{{ID: "pirate", Scale: 1}}, ""},
		{`{"id":"pirate"}`, nil, "lora must be an array"},
		{`"pirate"`, nil, "lora must be an array"},
		{`["pirate"]`, nil, "lora[0] must be an object"},
		{`[{"scale":1}]`, nil, "lora[0].id must be a non-empty string"},
		{`[{"id":""}]`, nil, "lora[0].id must be a non-empty string"},
		{`[{"id":3}]`, nil, "lora[0].id must be a non-empty string"},
		{`[{"id":"a"},{"id":"b","scale":"NaN"}]`, nil, "lora[1].scale must be a number"},
		{`[{"id":"a","scale":true}]`, nil, "lora[0].scale must be a number"},
		{`[{"id":"a"},{"id":"a"}]`, nil, `lora[1].id "a" is named twice`},
		{`[` + strings.Repeat(`{"id":"x"},`, MaxRequestAdapters) + `{"id":"y"}]`, nil, "at most 8"},
	} {
		got, err := ParseAdapters(json.RawMessage(tt.raw))
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: error %v, want one containing %q", tt.raw, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("%s: %v", tt.raw, err)
		case tt.err == "" && (!reflect.DeepEqual(got, tt.want) || (got == nil) != (tt.want == nil)):
			t.Errorf("%s: got %#v, want %#v", tt.raw, got, tt.want)
		}
	}
}
