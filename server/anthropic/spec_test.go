package anthropic_test

import (
	"net/http"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestSpeculative: the top-level speculative field reaches the engine, and the message (and the
// streaming message_delta) carries superfluid.spec only when speculation ran.
func TestSpeculative(t *testing.T) {
	f := setup(t, config{})
	msg, err := f.client.Messages.New(t.Context(), params(), option.WithJSONSet("speculative", map[string]any{"mode": "ngram", "draft_tokens": 8}))
	if err != nil {
		t.Fatal(err)
	}
	if got := servertest.SpecOf(t, msg.JSON.ExtraFields["superfluid"].Raw()); got != servertest.FakeSpec {
		t.Errorf("message: superfluid.spec %s, want %s", got, servertest.FakeSpec)
	}
	reqs := f.eng.Requests()
	if s := reqs[len(reqs)-1].Speculative; s == nil || *s != (llm.Speculative{Mode: llm.SpecNgram, DraftTokens: 8}) {
		t.Errorf("engine got speculative %+v", s)
	}
	if msg, err = f.client.Messages.New(t.Context(), params()); err != nil {
		t.Fatal(err)
	}
	if raw := msg.JSON.ExtraFields["superfluid"].Raw(); raw != "" {
		t.Errorf("no speculation: superfluid %s", raw)
	}

	s := f.client.Messages.NewStreaming(t.Context(), params(), option.WithJSONSet("speculative", "draft"))
	var delta string
	for s.Next() {
		if ev := s.Current(); ev.Type == "message_delta" {
			delta = ev.AsMessageDelta().JSON.ExtraFields["superfluid"].Raw()
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if got := servertest.SpecOf(t, delta); got != servertest.FakeSpec {
		t.Errorf("message_delta: superfluid %s, want spec %s", delta, servertest.FakeSpec)
	}
}

// TestSpeculativeRefused: a bad speculative value is a 400 invalid_request_error naming it.
func TestSpeculativeRefused(t *testing.T) {
	f := setup(t, config{})
	for _, bad := range []struct{ value, want string }{
		{`"medusa"`, `speculative: speculative mode "medusa" is unknown; use off, ngram or draft`},
		{`{"mode":"ngram","draft_tokens":0}`, "between 1 and 32, got 0"},
		{`{"mode":"ngram","draft_tokens":33}`, "between 1 and 32, got 33"},
		{`{"draft_tokens":"x"}`, "integer between 1 and 32"},
		{`false`, "mode string"},
	} {
		for _, stream := range []string{`"stream":false`, `"stream":true`} {
			resp, b := f.do(t, http.MethodPost, "/v1/messages", body(stream+`,"speculative":`+bad.value))
			checkError(t, resp, b, wantError{status: http.StatusBadRequest, typ: "invalid_request_error", msg: bad.want})
		}
	}
	if n := len(f.eng.Requests()); n != 0 {
		t.Errorf("%d refused requests reached the engine", n)
	}
}
