package openai_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestResponsesEncryptedReasoning: with include reasoning.encrypted_content a reasoning item
// carries the server's blob; sent back alone (no content, no summary, store false) it gives
// the model its reasoning again, on this server or another; reasoning.summary fills the
// item's summary, streamed as summary events.
func TestResponsesEncryptedReasoning(t *testing.T) {
	a := startResponsesWith(t, filepath.Join(t.TempDir(), "db.sqlite"), respConfig{reply: thinkingReply})
	body := `{"model":"fake","input":"hi","store":false,"include":["reasoning.encrypted_content"],"reasoning":{"summary":"auto"}}`
	r, _ := postResponse(t, a, body)
	if len(r.Output) != 2 || r.Output[0].Type != "reasoning" {
		t.Fatalf("output %q", outputViews(&r))
	}
	rs := r.Output[0].AsReasoning()
	if !strings.HasPrefix(rs.EncryptedContent, "sfr1.") || len(rs.Summary) != 1 || rs.Summary[0].Text != "The user greets me." || rs.Summary[0].Type != "summary_text" {
		t.Errorf("reasoning item %s", r.Output[0].RawJSON())
	}
	evs, err := rawStream(t, a, strings.TrimSuffix(body, "}")+`,"stream":true}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	final := checkStream(t, evs)
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	for _, want := range []string{"response.reasoning_summary_part.added", "response.reasoning_summary_text.delta", "response.reasoning_summary_text.done", "response.reasoning_summary_part.done"} {
		if !slices.Contains(types, want) {
			t.Errorf("the stream has no %s: %v", want, types)
		}
	}
	if blob := final.Output[0].AsReasoning().EncryptedContent; !strings.HasPrefix(blob, "sfr1.") {
		t.Errorf("streamed reasoning item %s", final.Output[0].RawJSON())
	}

	// Sent back to another server with only its id and blob.
	b := startResponsesWith(t, filepath.Join(t.TempDir(), "db.sqlite"), respConfig{template: transcriptTemplate})
	back := func(blob string) string {
		return `{"model":"fake","store":false,"input":[{"role":"user","content":"hi"},{"type":"reasoning","id":"` + rs.ID +
			`","summary":[],"encrypted_content":"` + blob + `"},{"role":"assistant","content":"Hello!"},{"role":"user","content":"again"}]}`
	}
	postResponse(t, b, back(rs.EncryptedContent))
	if want := "assistant: [The user greets me.] Hello!\n"; !strings.Contains(lastPrompt(b), want) {
		t.Errorf("prompt lacks %q:\n%s", want, lastPrompt(b))
	}

	// Without the include, no blob; without reasoning.summary, no summary.
	r, _ = postResponse(t, a, `{"model":"fake","input":"hi"}`)
	if rs := r.Output[0].AsReasoning(); rs.EncryptedContent != "" || len(rs.Summary) != 0 {
		t.Errorf("reasoning item %s", r.Output[0].RawJSON())
	}

	// A blob edited, cut or made elsewhere is a 400 naming it.
	body1, tag, _ := strings.Cut(strings.TrimPrefix(rs.EncryptedContent, "sfr1."), ".")
	flipped := []byte(body1)
	flipped[10] ^= 1
	for _, tc := range []struct{ name, blob, msg string }{
		{"edited", "sfr1." + string(flipped) + "." + tag, "damaged or was edited"},
		{"cut", rs.EncryptedContent[:len(rs.EncryptedContent)-4], "damaged or was edited"},
		{"without its tag", "sfr1." + body1, "damaged or was edited"},
		{"OpenAI's", "gAAAAABo" + strings.Repeat("x", 40), "not made by this server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := b.raw(t, http.MethodPost, "/v1/responses", back(tc.blob))
			checkRespError(t, resp, body, http.StatusBadRequest, "invalid_request_error", "input[1].encrypted_content", "", tc.msg)
		})
	}
}

// TestResponsesAgentFields: the fields agents send with no local meaning are accepted, echoed
// where OpenAI echoes them, and warned about where the client would care.
func TestResponsesAgentFields(t *testing.T) {
	s := newResponsesServer(t)
	body := `{"model":"fake","input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"Be terse."}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}],
		"prompt_cache_key":"01a2-session","client_metadata":{"x-codex-installation-id":"abc"},"safety_identifier":"user-1","service_tier":"auto",
		"truncation":"auto","text":{"verbosity":"low"},"user":"u1","metadata":{"k":"v"},"parallel_tool_calls":false,"max_tool_calls":3,
		"prompt":{"id":"pmpt_1","version":"2"},"include":["reasoning.encrypted_content","file_search_call.results","future.thing"],
		"stream_options":{"include_obfuscation":false},"reasoning":{"summary":"detailed"}}`
	r, raw := postResponse(t, s, body)
	if r.OutputText() != respReply {
		t.Errorf("output %q", outputViews(&r))
	}
	if p := lastPrompt(s); !strings.HasPrefix(p, "<|im_start|>system\nBe terse.<|im_end|>") {
		t.Errorf("developer is not the system turn:\n%s", p)
	}
	var echo struct {
		User           string `json:"user"`
		PromptCacheKey string `json:"prompt_cache_key"`
		Safety         string `json:"safety_identifier"`
		Text           struct{ Verbosity string }
	}
	_ = json.Unmarshal([]byte(raw), &echo)
	if echo.User != "u1" || echo.PromptCacheKey != "01a2-session" || echo.Safety != "user-1" || echo.Text.Verbosity != "low" {
		t.Errorf("echo %+v", echo)
	}
	ws := warnings(t, raw)
	if len(ws) != 2 || !strings.Contains(ws[0], "prompt template") || !strings.Contains(ws[1], `"future.thing"`) {
		t.Errorf("warnings %q, want the prompt's and the unknown include's", ws)
	}
}
