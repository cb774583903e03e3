package reqbody

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
)

// own is an error of a type's own UnmarshalJSON, which a dialect finds again in the Problem.
var own = errors.New("own")

type strict struct{}

func (*strict) UnmarshalJSON([]byte) error { return own }

func TestDecode(t *testing.T) {
	type target struct {
		N int      `json:"n"`
		L []string `json:"l"`
		S *strict  `json:"s"`
	}
	cases := []struct {
		body string
		want Problem
	}{
		{"", Problem{Kind: Empty}},
		{`[1]`, Problem{Kind: NotObject}},
		{`{"n": "x"}`, Problem{Kind: WrongType, Field: "n", GoType: "int", Value: "string"}},
		{`{"l": 5}`, Problem{Kind: WrongType, Field: "l", GoType: "[]string", Value: "number"}},
		{`{"n": 1`, Problem{Kind: Malformed, Offset: 7}},
		{strings.Repeat("[", MaxDepth+1), Problem{Kind: TooDeep, Offset: MaxDepth + 1}},
		{`{"s": {}}`, Problem{Kind: Other}},
	}
	for _, c := range cases {
		r := httptest.NewRequest("POST", "/", strings.NewReader(c.body))
		var v target
		err := Decode(r, &v)
		var p *Problem
		if !errors.As(err, &p) {
			t.Fatalf("%q: %v is not a Problem", c.body, err)
		}
		got := *p
		got.Err = nil
		if got != c.want {
			t.Errorf("%q: got %+v, want %+v", c.body, got, c.want)
		}
	}
	r := httptest.NewRequest("POST", "/", strings.NewReader(`{"s": 1}`))
	if err := Decode(r, &struct{ S *strict }{}); !errors.Is(err, own) || Classify(err).Kind != Other {
		t.Errorf("a type's own error is lost: %v", err)
	}
}

func TestShapeOf(t *testing.T) {
	for goType, want := range map[string]Shape{"int": IntegerShape, "*uint8": IntegerShape, "float64": NumberShape,
		"[]string": ArrayShape, "map[string]any": MapShape, "string": StringShape, "*bool": BoolShape, "openai.Tool": AnyShape} {
		if got := ShapeOf(goType); got != want {
			t.Errorf("ShapeOf(%q) = %d, want %d", goType, got, want)
		}
	}
}
