package chat

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The golden tests run the tool-call parsers over raw model output kept in
// testdata/toolcalls/<family>/<name>.txt (one trailing newline of the file
// is not part of the sample) and compare with <name>.golden. Each reply is
// split the way the server splits it: reasoning first (the family's
// thinking markers, the model opening the block itself), then tool calls
// in the content. It is parsed whole with Parse and streamed in pieces of
// several sizes through ReasoningStream and ToolStream.
//
//	go test ./runtime/chat -run TestToolCallGolden -update-toolcalls
//
// rewrites the golden files from what the parsers return now; read the
// diff before committing it.
var updateToolCalls = flag.Bool("update-toolcalls", false, "rewrite testdata/toolcalls/*/*.golden from the parsers' output")

// goldenFamily is one folder of samples: the parser the family's template
// gets and the family's thinking markers ("" for none).
type goldenFamily struct {
	parser      ToolParser
	open, close string
}

var goldenFamilies = map[string]goldenFamily{
	"hermes":  {HermesToolParser{}, "<think>", "</think>"},  // Qwen2.5, Qwen3, QwQ, Hermes 2 Pro / 3
	"llama3":  {Llama3ToolParser{}, "", ""},                 // Llama 3.1, 3.2, 3.3
	"mistral": {MistralToolParser{}, "[THINK]", "[/THINK]"}, // Mistral 7B v0.3, Nemo, Small 3.x, Magistral, Devstral
	"generic": {GenericToolParser{}, "<think>", "</think>"}, // templates without a tool syntax; forced calls
}

// goldenCall is a call as a golden file shows it: the id is random and
// left out.
type goldenCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// goldenResult is what a golden file holds. StreamContent is there only
// when the streamed content differs from Parse's (whitespace next to calls
// may).
type goldenResult struct {
	Reasoning     string       `json:"reasoning,omitempty"`
	Content       string       `json:"content"`
	StreamContent *string      `json:"stream_content,omitempty"`
	Calls         []goldenCall `json:"calls"`
	Suspect       bool         `json:"suspect"`
}

// streamSizes are the piece sizes replies are streamed in; 0 means the
// whole reply at once.
var streamSizes = []int{1, 2, 3, 5, 8, 13, 0}

func TestToolCallGolden(t *testing.T) {
	samples, err := filepath.Glob(filepath.Join("testdata", "toolcalls", "*", "*.txt"))
	if err != nil || len(samples) == 0 {
		t.Fatalf("no samples in testdata/toolcalls (glob error: %v)", err)
	}
	families := map[string]int{}
	for _, path := range samples {
		family := filepath.Base(filepath.Dir(path))
		name := strings.TrimSuffix(filepath.Base(path), ".txt")
		families[family]++
		t.Run(family+"/"+name, func(t *testing.T) {
			f, ok := goldenFamilies[family]
			if !ok {
				t.Fatalf("unknown family folder %q", family)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			text := strings.TrimSuffix(string(raw), "\n")

			got := parseGolden(t, f, text)
			var streamed goldenResult
			for _, size := range streamSizes {
				s := streamGolden(t, f, text, size)
				if size == streamSizes[0] {
					streamed = s
					continue
				}
				if d := diffGolden(streamed, s); d != "" {
					t.Errorf("streamed in pieces of %d, not %d: %s", size, streamSizes[0], d)
				}
			}
			if streamed.Content != got.Content {
				c := streamed.Content
				got.StreamContent = &c
			}
			streamed.StreamContent = got.StreamContent
			streamed.Content = got.Content
			if d := diffGolden(got, streamed); d != "" {
				t.Errorf("streamed differs from Parse: %s", d)
			}

			goldenPath := strings.TrimSuffix(path, ".txt") + ".golden"
			if *updateToolCalls {
				if err := os.WriteFile(goldenPath, formatGolden(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			b, err := os.ReadFile(goldenPath)
			if err != nil {
				t.Fatalf("%v (run with -update-toolcalls to write it)", err)
			}
			var want goldenResult
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatalf("%s: %v", goldenPath, err)
			}
			if d := diffGolden(want, got); d != "" {
				t.Errorf("%s: %s", goldenPath, d)
			}
		})
	}
	for family := range goldenFamilies {
		if families[family] == 0 {
			t.Errorf("family %s has no samples", family)
		}
	}
}

// parseGolden splits the whole reply.
func parseGolden(t *testing.T, f goldenFamily, text string) goldenResult {
	t.Helper()
	reasoning, rest := SplitReasoning(text, f.open, f.close, false)
	content, calls, suspect, err := f.parser.Parse(rest)
	if (suspect != "") != (err != nil) {
		t.Errorf("Parse: suspect %q with error %v", suspect, err)
	}
	res := goldenResult{Reasoning: reasoning, Content: content, Suspect: err != nil, Calls: []goldenCall{}}
	for _, c := range calls {
		if !callIDShape.MatchString(c.ID) {
			t.Errorf("Parse: call id %q is malformed", c.ID)
		}
		res.Calls = append(res.Calls, goldenCall{c.Name, c.Arguments})
	}
	return res
}

// streamGolden streams the reply in pieces of size bytes (0: at once) the
// way the server does: the reasoning stream first, its content into the
// tool stream.
func streamGolden(t *testing.T, f goldenFamily, text string, size int) goldenResult {
	t.Helper()
	rs, ts := NewReasoningStream(f.open, f.close, false), NewToolStream(f.parser)
	var reasoning, content strings.Builder
	var deltas []ToolCallDelta
	feed := func(r, c string) {
		reasoning.WriteString(r)
		out, d := ts.Feed(c)
		content.WriteString(out)
		deltas = append(deltas, d...)
	}
	if size == 0 {
		size = max(len(text), 1)
	}
	for i := 0; i < len(text); i += size {
		feed(rs.Feed(text[i:min(i+size, len(text))]))
	}
	feed(rs.Close())
	out, d, suspect, err := ts.Close()
	content.WriteString(out)
	deltas = append(deltas, d...)
	if (suspect != "") != (err != nil) {
		t.Errorf("ToolStream: suspect %q with error %v", suspect, err)
	}

	res := goldenResult{Reasoning: reasoning.String(), Content: content.String(), Suspect: err != nil, Calls: []goldenCall{}}
	for _, d := range deltas {
		switch {
		case d.Index == len(res.Calls) && d.Name != "":
			if !callIDShape.MatchString(d.ID) {
				t.Errorf("ToolStream: call id %q is malformed", d.ID)
			}
			res.Calls = append(res.Calls, goldenCall{Name: d.Name})
		case d.Index == len(res.Calls)-1 && d.Name == "" && d.ID == "":
			res.Calls[d.Index].Arguments = append(res.Calls[d.Index].Arguments, d.Arguments...)
		default:
			t.Fatalf("ToolStream: delta %+v out of order", d)
		}
	}
	return res
}

// diffGolden describes how got differs from want, or returns "".
func diffGolden(want, got goldenResult) string {
	var d []string
	if want.Reasoning != got.Reasoning {
		d = append(d, fmt.Sprintf("reasoning %q, want %q", got.Reasoning, want.Reasoning))
	}
	if want.Content != got.Content {
		d = append(d, fmt.Sprintf("content %q, want %q", got.Content, want.Content))
	}
	ws, gs := want.Content, got.Content
	if want.StreamContent != nil {
		ws = *want.StreamContent
	}
	if got.StreamContent != nil {
		gs = *got.StreamContent
	}
	if ws != gs {
		d = append(d, fmt.Sprintf("streamed content %q, want %q", gs, ws))
	}
	if want.Suspect != got.Suspect {
		d = append(d, fmt.Sprintf("suspect %v, want %v", got.Suspect, want.Suspect))
	}
	if len(want.Calls) != len(got.Calls) {
		d = append(d, fmt.Sprintf("%d calls %s, want %d %s", len(got.Calls), callList(got.Calls), len(want.Calls), callList(want.Calls)))
	} else {
		for i := range want.Calls {
			w, g := want.Calls[i], got.Calls[i]
			if w.Name != g.Name || compactJSON(w.Arguments) != string(g.Arguments) {
				d = append(d, fmt.Sprintf("call %d %s(%s), want %s(%s)", i, g.Name, g.Arguments, w.Name, compactJSON(w.Arguments)))
			}
		}
	}
	return strings.Join(d, "; ")
}

func callList(calls []goldenCall) string {
	var s []string
	for _, c := range calls {
		s = append(s, fmt.Sprintf("%s(%s)", c.Name, c.Arguments))
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// compactJSON returns raw without insignificant whitespace; the golden
// files may be edited by hand.
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// formatGolden writes r as indented JSON with one call per line and the
// arguments compact, as the parsers return them; markup such as
// <tool_call> stays readable (no HTML escaping).
func formatGolden(r goldenResult) []byte {
	str := func(s string) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s) // a string always encodes
		return strings.TrimSuffix(b.String(), "\n")
	}
	var b strings.Builder
	b.WriteString("{\n")
	if r.Reasoning != "" {
		fmt.Fprintf(&b, "  \"reasoning\": %s,\n", str(r.Reasoning))
	}
	fmt.Fprintf(&b, "  \"content\": %s,\n", str(r.Content))
	if r.StreamContent != nil {
		fmt.Fprintf(&b, "  \"stream_content\": %s,\n", str(*r.StreamContent))
	}
	if len(r.Calls) == 0 {
		b.WriteString("  \"calls\": [],\n")
	} else {
		b.WriteString("  \"calls\": [\n")
		for i, c := range r.Calls {
			sep := ","
			if i == len(r.Calls)-1 {
				sep = ""
			}
			fmt.Fprintf(&b, "    {\"name\": %s, \"arguments\": %s}%s\n", str(c.Name), compactJSON(c.Arguments), sep)
		}
		b.WriteString("  ],\n")
	}
	fmt.Fprintf(&b, "  \"suspect\": %v\n}\n", r.Suspect)
	return []byte(b.String())
}
