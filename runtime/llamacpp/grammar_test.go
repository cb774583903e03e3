package llamacpp

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

// TestJSONFormat: a constrained generation is valid JSON of the requested shape.
func TestJSONFormat(t *testing.T) {
	cases := []struct {
		name   string
		format string
		schema string
		check  func(v any) bool
	}{
		{"schema", llm.FormatSchema, `{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false}`,
			func(v any) bool {
				m, ok := v.(map[string]any)
				_, isBool := m["ok"].(bool)
				return ok && isBool && len(m) == 1
			}},
		{"enum", llm.FormatSchema, `{"type":"string","enum":["red","green"]}`, func(v any) bool { return v == "red" || v == "green" }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := greedy("Once upon a time", 300)
			req.Format, req.Schema = c.format, json.RawMessage(c.schema)
			r := mustGenerate(t, testEngine, req)
			if r.done.FinishReason != llm.FinishStop {
				t.Fatalf("finish %q after %d tokens: %q", r.done.FinishReason, r.done.Usage.CompletionTokens, r.text)
			}
			var v any
			if err := json.Unmarshal([]byte(strings.TrimSpace(r.text)), &v); err != nil || !c.check(v) {
				t.Fatalf("output %q: %v (value %#v)", r.text, err, v)
			}
		})
	}
}

// TestFormatWithIgnoreEOS: once the JSON is complete only EOS may follow, which ignore_eos
// bans; the reply then ends there ("stop") rather than aborting llama.cpp's grammar.
func TestFormatWithIgnoreEOS(t *testing.T) {
	req := greedy("Once upon a time", 300)
	req.Format, req.Schema, req.IgnoreEOS = llm.FormatSchema, json.RawMessage(`{"type":"string","enum":["red","green"]}`), true
	r := mustGenerate(t, testEngine, req)
	if v := strings.TrimSpace(r.text); r.done.FinishReason != llm.FinishStop || (v != `"red"` && v != `"green"`) {
		t.Fatalf("finish %q with %q", r.done.FinishReason, r.text)
	}
}

func TestBadSchema(t *testing.T) {
	req := greedy("Once", 10)
	req.Format, req.Schema = llm.FormatSchema, json.RawMessage(`{"type":`)
	if _, err := generate(t, testEngine, req); !errors.Is(err, llm.ErrInvalidInput) {
		t.Fatalf("broken schema: %v", err)
	}
}

// TestJSONObjectFormat: "json" lets a story model write an open-ended object; whatever it
// writes within the cap is a valid JSON object or a valid prefix of one.
func TestJSONObjectFormat(t *testing.T) {
	req := greedy("Once upon a time", 120)
	req.Format = llm.FormatJSON
	r := mustGenerate(t, testEngine, req)
	text := strings.TrimSpace(r.text)
	if !strings.HasPrefix(text, "{") {
		t.Fatalf("output %q does not open an object", text)
	}
	dec := json.NewDecoder(strings.NewReader(text))
	for {
		_, err := dec.Token()
		if err == io.EOF && r.done.FinishReason == llm.FinishStop {
			return
		}
		if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
			if r.done.FinishReason != llm.FinishLength {
				t.Fatalf("output %q ended early with %q", text, r.done.FinishReason)
			}
			return
		}
		if err != nil {
			t.Fatalf("output %q is not JSON: %v", text, err)
		}
	}
}

// TestGrammarProbeSameDraws: asking the grammar about the best candidates first draws exactly
// what the full check of the vocabulary draws, greedy and sampled with top_k.
func TestGrammarProbeSameDraws(t *testing.T) {
	grammarProbeSameDraws(t, testEngine)
}

// TestGrammarProbeSameDraws32k: the same on a 32k vocabulary, where both probes (the best 64,
// then the best 1024) run before the whole vocabulary.
func TestGrammarProbeSameDraws32k(t *testing.T) {
	grammarProbeSameDraws(t, loadRandom32k(t))
}

func grammarProbeSameDraws(t *testing.T, e *Engine) {
	schema := json.RawMessage(`{"type":"object","properties":{"story":{"type":"string","minLength":40},"n":{"type":"integer"}},"required":["story","n"]}`)
	topK, temp := 8, 0.9
	for _, tc := range []struct {
		name string
		req  func() *llm.Request
	}{
		{"greedy", func() *llm.Request { return greedy("Once upon a time", 80) }},
		{"top_k", func() *llm.Request {
			r := greedy("Once upon a time", 80)
			r.Sampling = llm.Sampling{Temperature: &temp, TopK: &topK, Seed: 42}
			return r
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var texts [2]string
			for i, probe := range []bool{true, false} {
				probeGrammar = probe
				req := tc.req()
				req.Format, req.Schema = llm.FormatSchema, schema
				texts[i] = mustGenerate(t, e, req).text
			}
			probeGrammar = true
			if texts[0] != texts[1] {
				t.Errorf("with the probe %q\nwithout it   %q", texts[0], texts[1])
			}
			if !json.Valid([]byte(strings.TrimSpace(texts[0]))) && len(texts[0]) < 60 {
				t.Errorf("output %q", texts[0])
			}
		})
	}
}

// TestCompactJSON: with CompactJSON the output has no newlines or runs of spaces between
// tokens (a forced tool call from a small model stays short), and is still valid JSON.
func TestCompactJSON(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"array","items":{"type":"integer"},"maxItems":3}},"required":["a","b"]}`)
	req := greedy("Once upon a time", 120)
	req.Format, req.Schema, req.CompactJSON = llm.FormatSchema, schema, true
	r := mustGenerate(t, testEngine, req)
	out := strings.TrimSpace(r.text)
	if !json.Valid([]byte(out)) || strings.Contains(out, "\n") || strings.Contains(out, "  ") {
		t.Fatalf("output %q (finish %s)", r.text, r.done.FinishReason)
	}
	if g := string(compactSpace([]byte("root ::= \"{\" space\nspace ::= | \" \" | \"\\n\"{1,2} [ \\t]{0,20}\n"))); !strings.Contains(g, "space ::= | \" \"\n") || strings.Contains(g, "[ \\t]") {
		t.Errorf("compactSpace: %q", g)
	}
}
