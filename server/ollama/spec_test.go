package ollama_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/servertest"
)

// lastSpec is the superfluid.spec of an NDJSON body's last line ("" when it has none); every
// earlier line must have none.
func lastSpec(t *testing.T, body []byte) string {
	t.Helper()
	ls := strings.Split(strings.TrimSpace(string(body)), "\n")
	spec := ""
	for i, l := range ls {
		var line struct {
			Superfluid *struct {
				Spec json.RawMessage `json:"spec"`
			} `json:"superfluid"`
		}
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if line.Superfluid == nil || line.Superfluid.Spec == nil {
			continue
		}
		if i != len(ls)-1 {
			t.Errorf("spec on line %d of %d: %s", i+1, len(ls), l)
		}
		spec = string(line.Superfluid.Spec)
	}
	return spec
}

// TestSpeculative: speculative in options (through Ollama's own client) and at the top level
// reaches the engine, the top level winning, and the last line carries superfluid.spec, for
// /api/chat and /api/generate, streaming or not.
func TestSpeculative(t *testing.T) {
	f := setup(t, config{})
	stream := false
	err := f.client.Chat(t.Context(), &api.ChatRequest{Model: "fake", Stream: &stream,
		Messages: []api.Message{{Role: "user", Content: "hi"}}, Options: map[string]any{"speculative": map[string]any{"mode": "ngram", "draft_tokens": 5}}},
		func(api.ChatResponse) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if s := f.lastRequest(t).Speculative; s == nil || *s != (llm.Speculative{Mode: llm.SpecNgram, DraftTokens: 5}) {
		t.Errorf("options.speculative: engine got %+v", s)
	}
	for _, tc := range []struct{ path, body string }{
		{"/api/chat", `{"model":"fake","messages":[{"role":"user","content":"hi"}]`},
		{"/api/generate", `{"model":"fake","prompt":"hi"`},
	} {
		for _, streamed := range []string{"true", "false"} {
			body := tc.body + `,"stream":` + streamed + `,"speculative":"draft","options":{"speculative":"off"}}`
			resp, b := f.do(t, http.MethodPost, tc.path, body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: %d %s", tc.path, resp.StatusCode, b)
			}
			if got := lastSpec(t, b); got != servertest.FakeSpec {
				t.Errorf("%s stream %s: last line's spec %s, want %s", tc.path, streamed, got, servertest.FakeSpec)
			}
			if s := f.lastRequest(t).Speculative; s == nil || s.Mode != llm.SpecDraft {
				t.Errorf("%s: the top level should win over options, engine got %+v", tc.path, s)
			}
			resp, b = f.do(t, http.MethodPost, tc.path, tc.body+`,"stream":`+streamed+`}`)
			if got := lastSpec(t, b); resp.StatusCode != http.StatusOK || got != "" || strings.Contains(string(b), "superfluid") {
				t.Errorf("%s without speculation: %d %s", tc.path, resp.StatusCode, b)
			}
		}
	}
}

// TestSpeculativeRefused: a bad value, at the top level or in options, is a 400 naming where.
func TestSpeculativeRefused(t *testing.T) {
	f := setup(t, config{})
	for _, bad := range []struct{ field, want string }{
		{`"speculative":"medusa"`, `speculative: speculative mode "medusa" is unknown; use off, ngram or draft`},
		{`"options":{"speculative":"medusa"}`, `option "speculative": speculative mode "medusa" is unknown`},
		{`"speculative":{"draft_tokens":0}`, "between 1 and 32, got 0"},
		{`"options":{"speculative":{"mode":"ngram","draft_tokens":33}}`, "between 1 and 32, got 33"},
		{`"speculative":{"draft_tokens":"x"}`, "integer between 1 and 32"},
		{`"speculative":1`, "mode string"},
	} {
		for _, prefix := range []string{`{"model":"fake","messages":[{"role":"user","content":"hi"}],`, `{"model":"fake","prompt":"hi",`} {
			path := "/api/chat"
			if strings.Contains(prefix, "prompt") {
				path = "/api/generate"
			}
			resp, b := f.do(t, http.MethodPost, path, prefix+bad.field+`}`)
			checkError(t, resp, b, http.StatusBadRequest, bad.want)
		}
	}
}
