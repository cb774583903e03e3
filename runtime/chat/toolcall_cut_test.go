package chat

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestCloseJSON(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"location":"Par`, `{"location":"Par"}`},
		{`{"location":"Paris","unit":"c`, `{"location":"Paris","unit":"c"}`},
		{`{"location":"Paris","un`, `{"location":"Paris"}`},
		{`{"location":"Paris",`, `{"location":"Paris"}`},
		{`{"location":`, `{}`},
		{`{"n":12`, `{}`},
		{`{"n":12,"m":3`, `{"n":12}`},
		{`{"ok":tr`, `{}`},
		{`{"a":[1,2,{"b":"x\`, `{"a":[1,2,{"b":"x"}]}`},
		{`{"a":"\u00`, `{"a":""}`},
		{`{"a":{"b":[`, `{"a":{"b":[]}}`},
		{`{`, `{}`},
		{``, `{}`},
		{`not json`, `{}`},
		{`{"a":1}`, `{"a":1}`},
	}
	for _, tt := range tests {
		got, complete := CloseJSON(tt.in)
		if string(got) != tt.want {
			t.Errorf("CloseJSON(%q) = %s, want %s", tt.in, got, tt.want)
		}
		if complete != (tt.in == tt.want) {
			t.Errorf("CloseJSON(%q) complete = %v", tt.in, complete)
		}
	}
}

// cutStream feeds text to a stream of p and cuts it.
func cutStream(p ToolParser, text string, complete func(string) string) (string, []ToolCallDelta, *CutCall, error) {
	s := NewToolStream(p)
	var content strings.Builder
	var calls []ToolCallDelta
	for _, r := range text { // one character at a time, the worst case for holding
		c, d := s.Feed(string(r))
		content.WriteString(c)
		calls = append(calls, d...)
	}
	c, d, cut, _, err := s.Cut(complete)
	content.WriteString(c)
	return content.String(), append(calls, d...), cut, err
}

// TestToolStreamCut: a reply cut by the cap inside a call gives the complete calls whole and
// the cut one with its partial arguments, in every family's JSON shape.
func TestToolStreamCut(t *testing.T) {
	only := func(p string) string {
		if strings.HasPrefix("get_weather", p) {
			return "get_weather"
		}
		return ""
	}
	tests := []struct {
		name    string
		p       ToolParser
		text    string
		content string
		calls   []string // name:arguments
		cut     string   // the cut call's name
	}{
		{"forced, cut in the arguments", GenericToolParser{}, `{"name":"get_weather","arguments":{"loc`, "", []string{`get_weather:{"loc`}, "get_weather"},
		{"forced, cut before the arguments", GenericToolParser{}, `{"name":"get_weather","arg`, "", []string{`get_weather:`}, "get_weather"},
		{"forced, cut in the name, completed", GenericToolParser{}, `{"name":"get_w`, "", []string{`get_weather:`}, "get_weather"},
		{"parallel, one whole and one cut", GenericToolParser{}, `[{"name":"now","arguments":{}},{"name":"get_weather","arguments":{"location":"Pa`,
			"", []string{`now:{}`, `get_weather:{"location":"Pa`}, "get_weather"},
		{"hermes, a whole block then a cut one", HermesToolParser{}, "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Pa",
			"", []string{`now:{}`, `get_weather:{"location": "Pa`}, "get_weather"},
		{"mistral", MistralToolParser{}, `[TOOL_CALLS]get_weather[ARGS]{"location": "Pa`, "", []string{`get_weather:{"location": "Pa`}, "get_weather"},
		{"llama 3", Llama3ToolParser{}, `<|python_tag|>{"name": "get_weather", "parameters": {"location": "Pa`, "", []string{`get_weather:{"location": "Pa`}, "get_weather"},
		{"openai shape", GenericToolParser{}, `{"type":"function","function":{"name":"get_weather","arguments":{"a":1`, "", []string{`get_weather:{"a":1`}, "get_weather"},
		{"text, not a call", GenericToolParser{}, `Hello, the weather`, "Hello, the weather", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			content, deltas, cut, err := cutStream(tt.p, tt.text, only)
			if err != nil {
				t.Errorf("err = %v", err)
			}
			if content != tt.content {
				t.Errorf("content = %q, want %q", content, tt.content)
			}
			var calls []string
			args := map[int]*strings.Builder{}
			var order []int
			names := map[int]string{}
			for _, d := range deltas {
				if d.Name != "" {
					if d.ID == "" {
						t.Errorf("opening delta without an id: %+v", d)
					}
					names[d.Index] = d.Name
					args[d.Index] = &strings.Builder{}
					order = append(order, d.Index)
				}
				args[d.Index].WriteString(d.Arguments)
			}
			for _, i := range order {
				calls = append(calls, names[i]+":"+args[i].String())
			}
			if strings.Join(calls, "|") != strings.Join(tt.calls, "|") {
				t.Errorf("calls = %q, want %q", calls, tt.calls)
			}
			if got := ""; cut != nil {
				got = cut.Name
				if got != tt.cut {
					t.Errorf("cut = %q, want %q", got, tt.cut)
				}
			} else if tt.cut != "" {
				t.Errorf("no cut call, want %q", tt.cut)
			}
		})
	}
}

// TestToolStreamCutNoName: a call cut before its name is known stays content.
func TestToolStreamCutNoName(t *testing.T) {
	content, calls, cut, _ := cutStream(GenericToolParser{}, `{"name":"get_w`, nil)
	if cut != nil || len(calls) > 0 || content != `{"name":"get_w` {
		t.Errorf("got content %q calls %v cut %v; want the text as content", content, calls, cut)
	}
}

// TestToolStreamCutBeforeName: a forced call cut before its name started is still the one tool
// it can be.
func TestToolStreamCutBeforeName(t *testing.T) {
	for _, text := range []string{`{`, `[{"name": `, `{"na`, `{"name":"`, `[ { "name"`, `[ `} {
		_, calls, cut, _ := cutStream(GenericToolParser{}, text, func(string) string { return "f" })
		if cut == nil || cut.Name != "f" || len(calls) != 1 {
			t.Errorf("%q: cut %+v calls %+v, want a call to f", text, cut, calls)
		}
	}
	if _, calls, _, _ := cutStream(GenericToolParser{}, `{"x": 1, "na`, func(string) string { return "f" }); len(calls) > 0 {
		t.Errorf("a call was made of an object that is not one: %+v", calls)
	}
}

// TestToolStreamCutJSONContent: cut JSON with a "name" but no arguments is content when no
// forced tool has that name (a reply that is JSON about a person, say).
func TestToolStreamCutJSONContent(t *testing.T) {
	const text = `{"name": "Alice", "age": 3`
	content, calls, cut, _ := cutStream(GenericToolParser{}, text, nil)
	if content != text || len(calls) > 0 || cut != nil {
		t.Errorf("content %q calls %+v cut %+v, want the text as content", content, calls, cut)
	}
}

// TestToolStreamCutUnnamedAfterCalls: complete calls before a call cut inside its name are
// served; the unnamed one is left out and reported.
func TestToolStreamCutUnnamedAfterCalls(t *testing.T) {
	content, calls, cut, _ := cutStream(GenericToolParser{}, `[ { "name" : "f" , "arguments" : { } }, { "name" : "get_weat`, nil)
	if content != "" || len(calls) != 2 || calls[0].Name != "f" || cut == nil || cut.Name != "" {
		t.Errorf("content %q calls %+v cut %+v; want the call to f and an unnamed cut", content, calls, cut)
	}
}

// FuzzCut: for any text, CloseJSON gives a JSON object that is a closed prefix of a cut object,
// and cutting a stream of any family never panics and never loses a call it names.
func FuzzCut(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"c\`, `[{"name":"f","arguments":{"x":`, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"s\": \"\\u00", `[TOOL_CALLS]f[ARGS]{"a`, `{"name":"f","arguments":"{\"a\":1"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, _ := CloseJSON(s)
		if !json.Valid(out) || out[0] != '{' {
			t.Fatalf("CloseJSON(%q) = %s, not a JSON object", s, out)
		}
		for _, p := range []ToolParser{GenericToolParser{}, HermesToolParser{}, MistralToolParser{}, Llama3ToolParser{}} {
			_, calls, cut, _ := cutStream(p, s, func(string) string { return "f" })
			for _, d := range calls {
				if d.Name == "" && d.Arguments == "" {
					t.Fatalf("%T: an empty delta for %q", p, s)
				}
			}
			if cut != nil && cut.Name != "" && len(calls) == 0 {
				t.Fatalf("%T: cut %+v but no call for %q", p, cut, s)
			}
		}
	})
}

// TestCloseJSONLinear: cut arguments the model can write in one long reply (100,000 values,
// 30,000 open brackets) close in time linear in their length; every mark used to copy the
// prefix (7 s for the values, 10 s for the brackets on 2 shared cores), a CPU sink any
// prompt with a large max_tokens could fill.
func TestCloseJSONLinear(t *testing.T) {
	values := `{"a":[` + strings.Repeat("1,", 100000)
	brackets := `{"a":` + strings.Repeat("[", 30000)
	start := time.Now()
	got, _ := CloseJSON(values)
	if want := values[:len(values)-1] + "]}"; string(got) != want {
		t.Errorf("CloseJSON(100,000 values) = %.40s... (%d bytes), want %d bytes", got, len(got), len(want))
	}
	got, _ = CloseJSON(brackets)
	if !json.Valid(got) || len(got) < 2*9000 {
		t.Errorf("CloseJSON(30,000 [) = %.40s... (%d bytes), want a valid object nested to the depth encoding/json takes", got, len(got))
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("CloseJSON took %v, want well under 3 s (linear in the text)", d)
	}
}

// TestCutNameUnescaped: a cut call's name is decoded like a whole call's ("get\u005fx" is
// get_x), not served with its JSON escapes.
func TestCutNameUnescaped(t *testing.T) {
	for in, want := range map[string]string{
		`{"name": "get\u005fx", "arguments": {"a": 1`: "get_x",
		`{"name": "get\"x", "arguments": {"a": 1`:     `get"x`,
		`{"name": "get\u005`:                          "get",
	} {
		if _, c, ok := salvage(in); !ok || c == nil || c.Name != want {
			t.Errorf("salvage(%q) = %+v, %v; want the name %q", in, c, ok, want)
		}
	}
}
