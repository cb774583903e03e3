package ollama_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/types/model"

	"github.com/superfluid/superfluid/server/servertest"
)

// thinkingTemplate is ChatML that knows enable_thinking and prints reasoning_effort, as
// reasoning models' templates read them.
const thinkingTemplate = `{% if enable_thinking is defined and not enable_thinking %}[no thinking]{% endif %}` +
	`{% if reasoning_effort is defined %}[effort {{ reasoning_effort }}]{% endif %}` + chatML

const reasoned = "<think>\nThe user greets me.\n</think>\n\nHello!"

// TestThink: think reaches the template (enable_thinking, reasoning_effort), and the reply's
// reasoning comes back in message.thinking, or not at all with think false.
func TestThink(t *testing.T) {
	cases := []struct {
		name     string
		think    *api.ThinkValue
		prompt   string // what the template printed before the conversation
		thinking string
	}{
		{"absent", nil, "", "The user greets me."},
		{"true", &api.ThinkValue{Value: true}, "", "The user greets me."},
		{"false", &api.ThinkValue{Value: false}, "[no thinking]", ""},
		{"low", &api.ThinkValue{Value: "low"}, "[effort low]", "The user greets me."},
		{"high", &api.ThinkValue{Value: "high"}, "[effort high]", "The user greets me."},
		{"max is high", &api.ThinkValue{Value: "max"}, "[effort high]", "The user greets me."},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "", true: ", streamed"}[stream], func(t *testing.T) {
				f := setup(t, config{template: thinkingTemplate, reply: reasoned})
				lines := chatAll(t, f, &api.ChatRequest{Stream: &stream, Think: tc.think, Messages: []api.Message{{Role: "user", Content: "Hi"}}})
				g := gather(lines)
				if g.thinking != tc.thinking || g.content != "Hello!" {
					t.Errorf("thinking %q, content %q", g.thinking, g.content)
				}
				if p := f.lastRequest(t).Prompt; !strings.HasPrefix(p, tc.prompt+"<|im_start|>user") {
					t.Errorf("prompt %q, want it to start with %q", p, tc.prompt)
				}
				if !stream || tc.thinking == "" {
					return
				}
				// Reasoning streams at token cadence, all of it before the content.
				var pieces int
				for i, l := range lines {
					if l.Message.Thinking == "" {
						continue
					}
					pieces++
					if strings.Contains(gather(lines[:i+1]).content, "Hello") {
						t.Errorf("line %d: thinking after content", i)
					}
				}
				if pieces < 5 {
					t.Errorf("thinking came in %d lines; it should stream at token cadence", pieces)
				}
			})
		}
	}
}

// TestGenerateThink: /api/generate serves reasoning in its top-level thinking field.
func TestGenerateThink(t *testing.T) {
	f := setup(t, config{template: thinkingTemplate, reply: reasoned})
	for _, stream := range []bool{false, true} {
		var thinking, response strings.Builder
		err := f.client.Generate(t.Context(), &api.GenerateRequest{Model: "fake", Prompt: "Hi", Stream: &stream, Think: &api.ThinkValue{Value: "medium"}},
			func(r api.GenerateResponse) error {
				thinking.WriteString(r.Thinking)
				response.WriteString(r.Response)
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		if thinking.String() != "The user greets me." || response.String() != "Hello!" {
			t.Errorf("stream %v: thinking %q, response %q", stream, thinking.String(), response.String())
		}
		if p := f.lastRequest(t).Prompt; !strings.HasPrefix(p, "[effort medium]") {
			t.Errorf("prompt %q", p)
		}
	}
}

// TestShowCapabilities: /api/show lists tools and thinking from the template, in Ollama's order.
func TestShowCapabilities(t *testing.T) {
	refusing := `{% if tools %}{{ raise_exception('This model does not support tools.') }}{% endif %}` + chatML
	cases := []struct {
		name, template string
		fim            bool
		want           []model.Capability
	}{
		{"native tools", servertest.ToolTemplate, false, []model.Capability{"completion", "tools"}},
		{"polyfilled tools", chatML, false, []model.Capability{"completion", "tools"}},
		{"thinking, insert", thinkingTemplate, true, []model.Capability{"completion", "tools", "insert", "thinking"}},
		{"refusing tools", refusing, false, []model.Capability{"completion"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := setup(t, config{template: tc.template, fim: tc.fim})
			show, err := f.client.Show(t.Context(), &api.ShowRequest{Model: "fake"})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(show.Capabilities, tc.want) {
				t.Errorf("capabilities %v, want %v", show.Capabilities, tc.want)
			}
		})
	}
	// A template that cannot render tools refuses a request with tools, saying so.
	f := setup(t, config{template: refusing})
	resp, b := f.do(t, http.MethodPost, "/api/chat", `{"model":"fake","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}]}`)
	checkError(t, resp, b, http.StatusBadRequest, "cannot render the tools")
}

// checkLogprobs asserts one logprob per completion token whose bytes join into the text, each
// with top alternatives, most likely first, the chosen token the most likely (the fake's is).
func checkLogprobs(t *testing.T, lps []api.Logprob, tokens, top int, text string) {
	t.Helper()
	if len(lps) != tokens {
		t.Fatalf("%d logprobs for %d tokens", len(lps), tokens)
	}
	var joined []byte
	for _, lp := range lps {
		for _, b := range lp.Bytes {
			joined = append(joined, byte(b))
		}
		if lp.Logprob > 0 || len(lp.TopLogprobs) != top {
			t.Fatalf("logprob %+v, want %d alternatives", lp, top)
		}
		for k, alt := range lp.TopLogprobs {
			if k > 0 && alt.Logprob > lp.TopLogprobs[k-1].Logprob {
				t.Errorf("top_logprobs not sorted: %+v", lp.TopLogprobs)
			}
		}
		if top > 0 && lp.Logprob != lp.TopLogprobs[0].Logprob {
			t.Errorf("the chosen %q (%g) is not the most likely %q (%g)", lp.Token, lp.Logprob, lp.TopLogprobs[0].Token, lp.TopLogprobs[0].Logprob)
		}
	}
	if string(joined) != text {
		t.Errorf("logprob bytes %q, text %q", joined, text)
	}
}

// TestLogprobs: logprobs and top_logprobs on both routes, streamed (each line's logprobs cover
// its tokens) and not; top_logprobs alone asks for nothing, as in Ollama.
func TestLogprobs(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "not streamed", true: "streamed"}[stream]
		t.Run("chat, "+name, func(t *testing.T) {
			f := setup(t, config{})
			lines := chatAll(t, f, &api.ChatRequest{Stream: &stream, Logprobs: true, TopLogprobs: 3, Messages: []api.Message{{Role: "user", Content: "Hi"}}})
			g := gather(lines)
			checkLogprobs(t, g.logprobs, g.last.EvalCount, 3, g.content)
			for i, l := range lines {
				if stream && !l.Done && len(l.Logprobs) != len(l.Message.Content) {
					t.Errorf("line %d: %d logprobs for %q", i, len(l.Logprobs), l.Message.Content)
				}
			}
			if r := f.lastRequest(t); !r.Logprobs || r.TopLogprobs != 3 {
				t.Errorf("engine request logprobs %v top %d", r.Logprobs, r.TopLogprobs)
			}
		})
		t.Run("raw generate, "+name, func(t *testing.T) {
			f := setup(t, config{})
			var lps []api.Logprob
			var text strings.Builder
			var count int
			err := f.client.Generate(t.Context(), &api.GenerateRequest{Model: "fake", Prompt: "Once", Raw: true, Stream: &stream, Logprobs: true},
				func(r api.GenerateResponse) error {
					lps = append(lps, r.Logprobs...)
					text.WriteString(r.Response)
					count = r.EvalCount
					return nil
				})
			if err != nil {
				t.Fatal(err)
			}
			checkLogprobs(t, lps, count, 0, text.String())
		})
	}
	t.Run("top_logprobs without logprobs", func(t *testing.T) {
		f := setup(t, config{})
		resp, b := f.do(t, http.MethodPost, "/api/chat", `{"model":"fake","stream":false,"top_logprobs":5,"messages":[{"role":"user","content":"hi"}]}`)
		if resp.StatusCode != http.StatusOK || strings.Contains(string(b), "logprobs") {
			t.Errorf("%d %s", resp.StatusCode, b)
		}
		if r := f.lastRequest(t); r.Logprobs || r.TopLogprobs != 0 {
			t.Errorf("engine request logprobs %v top %d", r.Logprobs, r.TopLogprobs)
		}
	})
}
