package anthropic_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
)

// TestToolUseCut: a call cut by max_tokens comes back as a tool_use block with stop_reason
// max_tokens, beside the complete calls of the same reply: its input is the longest prefix of
// its arguments that parses, closed, in a whole reply; a stream sends the partial JSON as
// generated. Forced (the generic JSON shape, cut at 10 tokens and inside the arguments) and
// auto (Hermes blocks, the first complete).
func TestToolUseCut(t *testing.T) {
	two := `[{"name": "get_weather", "arguments": {"city": "Oslo"}}, {"name": "get_weather", "arguments": {"city": "Bergen"}}]`
	hermesTwo := weatherCall + "\n" + strings.Replace(weatherCall, "Oslo", "Bergen", 1)
	forced := func(p *anthropic.MessageNewParams) {
		p.ToolChoice = anthropic.ToolChoiceParamOfTool("get_weather")
	}
	anyTool := func(p *anthropic.MessageNewParams) {
		p.ToolChoice = anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{}}
	}
	tests := []struct {
		name, reply string
		max         int
		choice      func(*anthropic.MessageNewParams)
		inputs      []string // each tool_use block's input in a whole reply
		partial     []string // ... and as a stream accumulates it
	}{
		{"forced, cut at 10 tokens", weatherJSON, 10, forced, []string{`{}`}, []string{`{}`}},
		{"forced, cut inside the arguments", weatherJSON, strings.Index(weatherJSON, "Oslo") + 2, forced,
			[]string{`{"city":"Os"}`}, []string{`{"city": "Os`}},
		{"any, a complete call and a cut one", two, strings.Index(two, "Bergen") + 3, anyTool,
			[]string{`{"city":"Oslo"}`, `{"city":"Ber"}`}, []string{`{"city":"Oslo"}`, `{"city": "Ber`}},
		{"auto, a complete block and a cut one", hermesTwo, strings.Index(hermesTwo, "Bergen") + 3, nil,
			[]string{`{"city":"Oslo"}`, `{"city":"Ber"}`}, []string{`{"city":"Oslo"}`, `{"city": "Ber`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t, config{template: hermesTemplate, reply: tt.reply})
			p := toolParams(func(p *anthropic.MessageNewParams) {
				p.MaxTokens = int64(tt.max)
				if tt.choice != nil {
					tt.choice(p)
				}
			})
			msg, err := f.client.Messages.New(t.Context(), p)
			if err != nil {
				t.Fatal(err)
			}
			check := func(how string, msg anthropic.Message, want []string, exact bool) {
				t.Helper()
				uses := toolUses(msg)
				if msg.StopReason != anthropic.StopReasonMaxTokens || len(uses) != len(want) {
					t.Fatalf("%s: stop %q, %d tool_use blocks (%+v); want max_tokens and %d", how, msg.StopReason, len(uses), msg.Content, len(want))
				}
				for i, u := range uses {
					if u.Name != "get_weather" || !strings.HasPrefix(u.ID, "toolu_") {
						t.Errorf("%s: block %d is %s %s", how, i, u.Name, u.ID)
					}
					if exact && i == len(uses)-1 {
						if string(u.Input) != want[i] {
							t.Errorf("%s: block %d input %s, want %s", how, i, u.Input, want[i])
						}
						continue
					}
					sameJSON(t, string(u.Input), want[i])
				}
				for _, b := range msg.Content {
					if b.Type == "text" && strings.Contains(b.Text, "get_weather") {
						t.Errorf("%s: the call is also served as text: %q", how, b.Text)
					}
				}
			}
			check("whole", *msg, tt.inputs, false)
			// The SDK's accumulator empties a cut block's input (it is not JSON), so the
			// partial JSON is read from the deltas.
			s := f.client.Messages.NewStreaming(t.Context(), p)
			var streamed anthropic.Message
			partial := map[int64]string{}
			for s.Next() {
				ev := s.Current()
				if err := streamed.Accumulate(ev); err != nil {
					t.Fatal(err)
				}
				if ev.Type == "content_block_delta" && ev.Delta.Type == "input_json_delta" {
					partial[ev.Index] += ev.Delta.PartialJSON
				}
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			for i, b := range streamed.Content {
				if b.Type == "tool_use" {
					if p, ok := partial[int64(i)]; ok {
						streamed.Content[i].Input = json.RawMessage(p)
					}
				}
			}
			check("streamed", streamed, tt.partial, true)
		})
	}
}

// TestToolUseCutWarning: the whole reply says the call was cut and how its input was made.
func TestToolUseCutWarning(t *testing.T) {
	f := setup(t, config{template: hermesTemplate, reply: weatherJSON})
	resp, b := f.do(t, http.MethodPost, "/v1/messages", body(weatherTools+`,"max_tokens":30,"tool_choice":{"type":"tool","name":"get_weather"}`))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var r wireReply
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Superfluid == nil || !strings.Contains(strings.Join(r.Superfluid.Warnings, ";"), `cut the reply inside the call to "get_weather"`) {
		t.Errorf("reply %s lacks the cut warning", b)
	}
}
