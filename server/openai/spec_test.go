package openai_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestSpeculativeReplies: the speculative field reaches the engine on chat, completions and
// responses, and superfluid.spec comes back, streaming or not, only when speculation ran.
func TestSpeculativeReplies(t *testing.T) {
	f := setup(t, config{})
	ctx := t.Context()
	lastSpec := func() *llm.Speculative {
		reqs := f.eng.Requests()
		return reqs[len(reqs)-1].Speculative
	}

	chat, err := f.client.Chat.Completions.New(ctx, params(nil), option.WithJSONSet("speculative", "ngram"))
	if err != nil {
		t.Fatal(err)
	}
	if got := servertest.SpecOf(t, chat.JSON.ExtraFields["superfluid"].Raw()); got != servertest.FakeSpec {
		t.Errorf("chat: superfluid.spec %s, want %s", got, servertest.FakeSpec)
	}
	if s := lastSpec(); s == nil || *s != (llm.Speculative{Mode: llm.SpecNgram}) {
		t.Errorf("chat: engine got speculative %+v", s)
	}
	plain, err := f.client.Chat.Completions.New(ctx, params(nil))
	if err != nil {
		t.Fatal(err)
	}
	if raw := plain.JSON.ExtraFields["superfluid"].Raw(); raw != "" || lastSpec() != nil {
		t.Errorf("chat without speculation: superfluid %s, engine got %+v", raw, lastSpec())
	}

	stream := f.client.Chat.Completions.NewStreaming(ctx, params(nil),
		option.WithJSONSet("speculative", map[string]any{"mode": "draft", "draft_tokens": 4}))
	var last string
	for stream.Next() {
		if raw := stream.Current().JSON.ExtraFields["superfluid"].Raw(); raw != "" {
			last = raw
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if got := servertest.SpecOf(t, last); got != servertest.FakeSpec || !strings.Contains(last, `"warm":0`) {
		t.Errorf("chat stream: terminal superfluid %s, want spec %s beside warm", last, servertest.FakeSpec)
	}
	if s := lastSpec(); s == nil || *s != (llm.Speculative{Mode: llm.SpecDraft, DraftTokens: 4}) {
		t.Errorf("chat stream: engine got speculative %+v", s)
	}

	cp := openai.CompletionNewParams{Model: "fake", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Hi")}}
	cmpl, err := f.client.Completions.New(ctx, cp, option.WithJSONSet("speculative", "ngram"))
	if err != nil {
		t.Fatal(err)
	}
	if got := servertest.SpecOf(t, cmpl.JSON.ExtraFields["superfluid"].Raw()); got != servertest.FakeSpec {
		t.Errorf("completions: superfluid.spec %s, want %s", got, servertest.FakeSpec)
	}
	cs := f.client.Completions.NewStreaming(ctx, cp, option.WithJSONSet("speculative", "ngram"))
	last = ""
	for cs.Next() {
		if raw := cs.Current().JSON.ExtraFields["superfluid"].Raw(); raw != "" {
			last = raw
		}
	}
	if err := cs.Err(); err != nil {
		t.Fatal(err)
	}
	if got := servertest.SpecOf(t, last); got != servertest.FakeSpec {
		t.Errorf("completions stream: superfluid %s, want spec %s", last, servertest.FakeSpec)
	}
	if cmpl, err = f.client.Completions.New(ctx, cp, option.WithJSONSet("speculative", "off")); err != nil {
		t.Fatal(err)
	}
	if got := servertest.SpecOf(t, cmpl.JSON.ExtraFields["superfluid"].Raw()); got != "" {
		t.Errorf("completions with speculation off: spec %s", got)
	}

	rp := responses.ResponseNewParams{Model: "fake", Input: text("Say hello.")}
	resp, err := f.client.Responses.New(ctx, rp, option.WithJSONSet("speculative", "ngram"))
	if err != nil {
		t.Fatal(err)
	}
	if got := servertest.SpecOf(t, resp.JSON.ExtraFields["superfluid"].Raw()); got != servertest.FakeSpec {
		t.Errorf("responses: superfluid.spec %s, want %s", got, servertest.FakeSpec)
	}
	rs := f.client.Responses.NewStreaming(ctx, rp, option.WithJSONSet("speculative", "ngram"))
	var completed, created string
	for rs.Next() {
		ev := rs.Current()
		switch ev.Type {
		case "response.completed":
			completed = ev.Response.JSON.ExtraFields["superfluid"].Raw()
		case "response.created":
			created = ev.Response.JSON.ExtraFields["superfluid"].Raw()
		}
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	if got := servertest.SpecOf(t, completed); got != servertest.FakeSpec || created != "" {
		t.Errorf("responses stream: completed superfluid %s (want spec %s), created %s (want none)", completed, servertest.FakeSpec, created)
	}
}

// TestSpeculativeDefault: a model whose engine speculates by default reports it on a request
// that names nothing, and a request's "off" turns it off.
func TestSpeculativeDefault(t *testing.T) {
	f := setup(t, config{engine: func(e *enginetest.Engine) { e.Speculative, e.SpecNote = llm.SpecNgram, "no draft model is loaded" }})
	chat, err := f.client.Chat.Completions.New(t.Context(), params(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"proposed":6,"accepted":3,"acceptance_rate":0.5,"note":"no draft model is loaded"}`
	if got := servertest.SpecOf(t, chat.JSON.ExtraFields["superfluid"].Raw()); got != want {
		t.Errorf("default speculation: spec %s, want %s", got, want)
	}
	if chat, err = f.client.Chat.Completions.New(t.Context(), params(nil), option.WithJSONSet("speculative", "off")); err != nil {
		t.Fatal(err)
	}
	if raw := chat.JSON.ExtraFields["superfluid"].Raw(); raw != "" {
		t.Errorf("speculation off: superfluid %s", raw)
	}
}

// TestSpeculativeRefused: every bad speculative value is a 400 naming the parameter, on each
// route that reads it.
func TestSpeculativeRefused(t *testing.T) {
	f := setup(t, config{})
	bodies := map[string]string{
		"/v1/chat/completions": `{"model":"fake","messages":[{"role":"user","content":"hi"}],"speculative":%s}`,
		"/v1/completions":      `{"model":"fake","prompt":"hi","speculative":%s}`,
		"/v1/responses":        `{"model":"fake","input":"hi","speculative":%s}`,
	}
	for _, bad := range []struct{ value, want string }{
		{`"medusa"`, "off, ngram or draft"},
		{`{"mode":"eagle"}`, "off, ngram or draft"},
		{`{"mode":"ngram","draft_tokens":0}`, "between 1 and 32"},
		{`{"mode":"ngram","draft_tokens":33}`, "between 1 and 32"},
		{`{"draft_tokens":"x"}`, "integer between 1 and 32"},
		{`7`, "mode string"},
		{`["ngram"]`, "mode string"},
	} {
		for path, body := range bodies {
			resp, b := f.do(t, http.MethodPost, path, strings.Replace(body, "%s", bad.value, 1))
			var e struct {
				Error struct {
					Message string `json:"message"`
					Type    string `json:"type"`
					Param   string `json:"param"`
				} `json:"error"`
			}
			_ = json.Unmarshal(b, &e)
			if resp.StatusCode != http.StatusBadRequest || e.Error.Param != "speculative" || e.Error.Type != "invalid_request_error" ||
				!strings.Contains(e.Error.Message, bad.want) {
				t.Errorf("%s speculative %s: %d %s", path, bad.value, resp.StatusCode, b)
			}
		}
	}
	if n := len(f.eng.Requests()); n != 0 {
		t.Errorf("%d refused requests reached the engine", n)
	}
}

// TestSpeculativeRecorded: the request record keeps speculation's counts (summed over the
// choices), the tokens restored from disk and the cache miss.
func TestSpeculativeRecorded(t *testing.T) {
	f := setup(t, config{engine: func(e *enginetest.Engine) { e.RestoredTokens, e.CacheMiss = 7, llm.CacheMissDiverged(9) }})
	got, err := f.client.Chat.Completions.New(t.Context(), params(func(p *openai.ChatCompletionNewParams) { p.N = openai.Int(2) }),
		option.WithJSONSet("speculative", "ngram"))
	if err != nil {
		t.Fatal(err)
	}
	if got := servertest.SpecOf(t, got.JSON.ExtraFields["superfluid"].Raw()); got != `{"proposed":12,"accepted":6,"acceptance_rate":0.5}` {
		t.Errorf("two choices: spec %s", got)
	}
	plain, err := f.client.Chat.Completions.New(t.Context(), params(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.st.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	rec, err := f.st.Request(t.Context(), got.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.SpecProposed != 12 || rec.SpecAccepted != 6 || rec.RestoredTokens != 7 || rec.CacheMiss != "diverged at token 9" {
		t.Errorf("record %+v", rec)
	}
	if rec, err = f.st.Request(t.Context(), plain.ID); err != nil || rec.SpecProposed != 0 || rec.SpecAccepted != 0 {
		t.Errorf("record without speculation %+v %v", rec, err)
	}
}
