package openai_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// transcriptTemplate writes every field of every message on one line, so a test sees how
// items became messages: reasoning in brackets, calls in angle brackets, a tool result's
// call id in parentheses. It reads tools (none are sent), so it is not given the polyfill.
const transcriptTemplate = `{%- if tools %}{{ tools | tojson }}{% endif %}{%- for m in messages %}{{ m.role }}:{% if m.reasoning_content %} [{{ m.reasoning_content }}]{% endif %}{% if m.content %} {{ m.content }}{% endif %}{% if m.tool_calls %}{% for c in m.tool_calls %} <{{ c.id }} {{ c.function.name }} {{ c.function.arguments | tojson }}>{% endfor %}{% endif %}{% if m.tool_call_id %} ({{ m.tool_call_id }}){% endif %}{{ '\n' }}{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}`

// TestResponsesItemsToConversation: input items become the conversation the template sees.
// An assistant turn gathers its reasoning, text and calls; each output is a tool message.
func TestResponsesItemsToConversation(t *testing.T) {
	call := func(id, args string) string {
		return `{"type":"function_call","call_id":"` + id + `","name":"get_weather","arguments":` + args + `}`
	}
	output := func(id, out string) string {
		return `{"type":"function_call_output","call_id":"` + id + `","output":` + out + `}`
	}
	user := `{"role":"user","content":"Weather?"}`
	cases := []struct {
		name  string
		items []string
		want  string
	}{
		{"a tool loop", []string{user, `{"type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"I should call it."}]}`,
			`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Let me check."}]}`,
			call("call_1", `"{\"city\":\"Oslo\"}"`), output("call_1", `"sunny"`)},
			"user: Weather?\nassistant: [I should call it.] Let me check. <call_1 get_weather {\"city\": \"Oslo\"}>\ntool: sunny (call_1)\n"},
		{"parallel calls are one turn", []string{user, call("call_1", `"{}"`), call("call_2", `"{\"city\":\"Bergen\"}"`),
			output("call_1", `"a"`), output("call_2", `"b"`)},
			"user: Weather?\nassistant: <call_1 get_weather {}> <call_2 get_weather {\"city\": \"Bergen\"}>\ntool: a (call_1)\ntool: b (call_2)\n"},
		{"text after calls is a turn of its own", []string{user, call("call_1", `""`), `{"role":"assistant","content":"Also this."}`},
			"user: Weather?\nassistant: <call_1 get_weather {}>\nassistant: Also this.\n"},
		{"reasoning after text is a turn of its own", []string{user, `{"role":"assistant","content":"A"}`,
			`{"type":"reasoning","content":[{"type":"reasoning_text","text":"R"}]}`, `{"role":"assistant","content":"B"}`},
			"user: Weather?\nassistant: A\nassistant: [R] B\n"},
		{"reasoning from its summary", []string{user, `{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Summed up."}]}`,
			`{"role":"assistant","content":"Hi"}`},
			"user: Weather?\nassistant: [Summed up.] Hi\n"},
		{"output as text parts", []string{user, call("call_1", `"{}"`), output("call_1", `[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]`)},
			"user: Weather?\nassistant: <call_1 get_weather {}>\ntool: ab (call_1)\n"},
		{"developer is system", []string{`{"role":"developer","content":"Rules."}`, user}, "system: Rules.\nuser: Weather?\n"},
	}
	s := startResponsesWith(t, filepath.Join(t.TempDir(), "db.sqlite"), respConfig{template: transcriptTemplate})
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := s.raw(t, http.MethodPost, "/v1/responses", `{"model":"fake","input":[`+strings.Join(tc.items, ",")+`]}`)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			if got := s.eng.Requests()[i].Prompt; got != tc.want+"assistant:" {
				t.Errorf("prompt\n%s\nwant\n%sassistant:", got, tc.want)
			}
			// input_items gives the items back with ids, in order.
			var r struct{ ID string }
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			page, err := s.client.Responses.InputItems.List(t.Context(), r.ID, responses.InputItemListParams{Order: responses.InputItemListParamsOrderAsc})
			if err != nil || len(page.Data) != len(tc.items) {
				t.Fatalf("input_items: %v, %d items", err, len(page.Data))
			}
			for j, it := range page.Data {
				var want struct{ Type string }
				_ = json.Unmarshal([]byte(tc.items[j]), &want)
				if it.ID == "" || want.Type != "" && it.Type != want.Type {
					t.Errorf("input item %d: id %q type %q, sent %s", j, it.ID, it.Type, tc.items[j])
				}
			}
		})
	}
}

const thinkingReply = "<think>\nThe user greets me.\n</think>\n\nHello!"

// TestResponsesReasoning: reasoning becomes a reasoning item before the message, streamed at
// token cadence, and counted in usage; continuing the response renders the reply's text.
func TestResponsesReasoning(t *testing.T) {
	s := startResponsesWith(t, filepath.Join(t.TempDir(), "db.sqlite"), respConfig{reply: thinkingReply})
	want := []string{"reasoning: The user greets me.", "message/completed: Hello!"}
	r, err := s.client.Responses.New(t.Context(), responses.ResponseNewParams{Model: "fake", Input: text("Say hello.")})
	if err != nil {
		t.Fatal(err)
	}
	if got := outputViews(r); !slices.Equal(got, want) || r.OutputText() != "Hello!" {
		t.Errorf("output %q, text %q", got, r.OutputText())
	}
	if u := r.Usage; u.OutputTokensDetails.ReasoningTokens <= int64(len("The user greets me.")) || u.OutputTokensDetails.ReasoningTokens >= u.OutputTokens {
		t.Errorf("reasoning tokens %d of %d", u.OutputTokensDetails.ReasoningTokens, u.OutputTokens)
	}
	var raw struct {
		Output []json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal([]byte(r.RawJSON()), &raw); err != nil {
		t.Fatal(err)
	}
	id := r.Output[0].ID
	if !strings.HasPrefix(id, "rs_") {
		t.Errorf("reasoning item id %q", id)
	}
	sameJSON(t, string(raw.Output[0]), `{"id":"`+id+`","type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"The user greets me."}]}`)

	evs, err := streamEvents(t, s, responses.ResponseNewParams{Model: "fake", Input: text("Say hello.")})
	if err != nil {
		t.Fatal(err)
	}
	final := checkStream(t, evs)
	if got := outputViews(&final); !slices.Equal(got, want) {
		t.Errorf("streamed output %q", got)
	}
	var deltas int
	for _, ev := range evs {
		if ev.Type == "response.reasoning_text.delta" {
			deltas++
		}
	}
	if deltas < 5 {
		t.Errorf("reasoning came in %d deltas; it should stream at token cadence", deltas)
	}

	// The next turn sees the reply's text; this template does not render reasoning.
	_, err = s.client.Responses.New(t.Context(), responses.ResponseNewParams{Model: "fake", Input: text("And?"), PreviousResponseID: openai.String(r.ID)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.eng.Requests()[2].Prompt, chatMLPrompt("user", "Say hello.", "assistant", "Hello!", "user", "And?"); got != want {
		t.Errorf("next prompt %q, want %q", got, want)
	}
}

// kwargsTemplate shows the template variables reasoning.effort sets, then a ChatML conversation.
const kwargsTemplate = `{% if reasoning_effort is defined %}effort={{ reasoning_effort }};{% endif %}{% if enable_thinking is defined %}thinking={{ enable_thinking }};{% endif %}` + respChatML

// TestResponsesReasoningEffort: reasoning.effort reaches the template as reasoning_effort and
// enable_thinking; chat_template_kwargs win over it, and so does top-level enable_thinking.
func TestResponsesReasoningEffort(t *testing.T) {
	s := startResponsesWith(t, filepath.Join(t.TempDir(), "db.sqlite"), respConfig{template: kwargsTemplate})
	cases := []struct{ extra, want, echo string }{
		{``, ``, `{"effort":null,"summary":null}`},
		{`"reasoning":{"effort":"low"}`, `effort=low;thinking=true;`, `{"effort":"low","summary":null}`},
		{`"reasoning":{"effort":"none","summary":"auto"}`, `thinking=false;`, `{"effort":"none","summary":"auto"}`},
		{`"reasoning":{"effort":"high"},"chat_template_kwargs":{"enable_thinking":false}`, `effort=high;thinking=false;`, `{"effort":"high","summary":null}`},
		{`"reasoning":{"effort":"medium"},"chat_template_kwargs":{"reasoning_effort":"max"}`, `effort=max;thinking=true;`, `{"effort":"medium","summary":null}`},
		{`"reasoning":{"effort":"none"},"enable_thinking":true`, `thinking=true;`, `{"effort":"none","summary":null}`},
	}
	for i, tc := range cases {
		body := `{"model":"fake","input":"hi"`
		if tc.extra != "" {
			body += "," + tc.extra
		}
		resp, b := s.raw(t, http.MethodPost, "/v1/responses", body+"}")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", tc.extra, resp.StatusCode, b)
		}
		if got := s.eng.Requests()[i].Prompt; !strings.HasPrefix(got, strings.ToLower(tc.want)+"<|im_start|>") &&
			!strings.HasPrefix(got, strings.ReplaceAll(strings.ReplaceAll(tc.want, "true", "True"), "false", "False")+"<|im_start|>") {
			t.Errorf("%s: prompt %q, want it to start with %q", tc.extra, got, tc.want)
		}
		var obj struct {
			Reasoning json.RawMessage `json:"reasoning"`
		}
		if err := json.Unmarshal(b, &obj); err != nil {
			t.Fatal(err)
		}
		sameJSON(t, string(obj.Reasoning), tc.echo)
	}
}

// TestResponsesLogprobs: include message.output_text.logprobs (or top_logprobs) puts each
// output token's logprob on the output_text part, and on the text deltas when streamed.
func TestResponsesLogprobs(t *testing.T) {
	s := newResponsesServer(t)
	params := responses.ResponseNewParams{Model: "fake", Input: text("Hi"), Temperature: openai.Float(0), TopLogprobs: openai.Int(3),
		Include: []responses.ResponseIncludable{responses.ResponseIncludableMessageOutputTextLogprobs}}
	r, err := s.client.Responses.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.eng.Requests()[0]; !got.Logprobs || got.TopLogprobs != 3 {
		t.Errorf("engine logprobs %v top %d", got.Logprobs, got.TopLogprobs)
	}
	lps := r.Output[0].AsMessage().Content[0].Logprobs
	if len(lps) != int(r.Usage.OutputTokens) || r.TopLogprobs != 3 {
		t.Fatalf("%d logprobs for %d tokens; top_logprobs echo %d", len(lps), r.Usage.OutputTokens, r.TopLogprobs)
	}
	var joined []byte
	for _, lp := range lps {
		for _, c := range lp.Bytes {
			joined = append(joined, byte(c))
		}
		if len(lp.TopLogprobs) != 3 || lp.Logprob > 0 || lp.Logprob != lp.TopLogprobs[0].Logprob {
			t.Errorf("token %+v: want 3 alternatives, the chosen one (temperature 0) first", lp)
		}
	}
	if string(joined) != r.OutputText() {
		t.Errorf("logprob bytes %q, text %q", joined, r.OutputText())
	}

	// Streamed: each text delta carries its tokens' logprobs; the done event has them all.
	evs, err := streamEvents(t, s, params)
	if err != nil {
		t.Fatal(err)
	}
	var tokens strings.Builder
	for _, ev := range evs {
		switch ev.Type {
		case "response.output_text.delta":
			for _, lp := range ev.Logprobs.OfResponseTextDeltaEventLogprobs {
				tokens.WriteString(lp.Token)
			}
		case "response.output_text.done":
			if n := len(ev.Logprobs.OfResponseTextDoneEventLogprobs); n != len(respReply) {
				t.Errorf("output_text.done has %d logprobs, want %d", n, len(respReply))
			}
		}
	}
	if tokens.String() != respReply {
		t.Errorf("streamed logprob tokens %q, want %q", tokens.String(), respReply)
	}

	// top_logprobs alone turns them on; neither leaves the part's logprobs empty.
	for _, tc := range []struct {
		extra string
		want  int
	}{{`"top_logprobs":2`, len(respReply)}, {`"top_logprobs":0`, 0}, {`"include":[]`, 0}} {
		_, b := s.raw(t, http.MethodPost, "/v1/responses", `{"model":"fake","input":"Hi",`+tc.extra+`}`)
		var obj struct {
			Output []struct {
				Content []struct {
					Logprobs []json.RawMessage `json:"logprobs"`
				} `json:"content"`
			} `json:"output"`
		}
		if err := json.Unmarshal(b, &obj); err != nil || len(obj.Output) != 1 || len(obj.Output[0].Content) != 1 {
			t.Fatalf("%s: %s", tc.extra, b)
		}
		if got := obj.Output[0].Content[0].Logprobs; len(got) != tc.want || got == nil {
			t.Errorf("%s: %d logprobs (nil %v), want %d", tc.extra, len(got), got == nil, tc.want)
		}
	}
}

// TestResponsesLogprobsBesideReasoning: the message's logprobs are those of its own text; the
// reasoning's tokens, its markers included, have none (as OpenAI serves them).
func TestResponsesLogprobsBesideReasoning(t *testing.T) {
	s := startResponsesWith(t, filepath.Join(t.TempDir(), "db.sqlite"), respConfig{reply: thinkingReply})
	params := responses.ResponseNewParams{Model: "fake", Input: text("Hi"),
		Include: []responses.ResponseIncludable{responses.ResponseIncludableMessageOutputTextLogprobs}}
	r, err := s.client.Responses.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := streamEvents(t, s, params)
	if err != nil {
		t.Fatal(err)
	}
	final := checkStream(t, evs)
	for _, resp := range []*responses.Response{r, &final} {
		msg := resp.Output[len(resp.Output)-1].AsMessage()
		var joined []byte
		for _, lp := range msg.Content[0].Logprobs {
			for _, c := range lp.Bytes {
				joined = append(joined, byte(c))
			}
		}
		if string(joined) != "Hello!" || resp.OutputText() != "Hello!" {
			t.Errorf("message %q has logprobs for %q", resp.OutputText(), joined)
		}
	}
}
