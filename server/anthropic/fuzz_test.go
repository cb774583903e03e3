package anthropic_test

import (
	"net/http"
	"testing"

	"github.com/superfluid/superfluid/server/servertest"
)

// FuzzMessages fuzzes POST /v1/messages bodies on the real router over the fake engine:
// whatever the bytes, the reply is never a 5xx, a 2xx parses, and a 4xx is Anthropic's error
// object with a request id.
func FuzzMessages(f *testing.F) {
	fx := setup(f, config{template: servertest.ToolTemplate})
	h := fx.srv.Config.Handler
	tools := `"tools":[{"name":"get_weather","description":"d","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]`
	for _, s := range []string{
		body(""),
		body(`"stream":true`),
		body(`"system":"Be brief.","temperature":0.2,"top_p":0.9,"top_k":5,"stop_sequences":["wor"]`),
		body(`"system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],"metadata":{"user_id":"u"}`),
		body(tools + `,"tool_choice":{"type":"any"}`),
		body(tools + `,"tool_choice":{"type":"tool","name":"get_weather"},"stream":true`),
		body(`"thinking":{"type":"enabled","budget_tokens":1024}`),
		`{"model":"fake","max_tokens":50,"messages":[{"role":"user","content":[{"type":"text","text":"weather?"}]},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"21C"}]}]}],` + tools + `}`,
		`{"model":"fake","max_tokens":10,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA"}}]}]}`,
		// What Claude Code sends: a system reminder inside messages, adaptive thinking shown
		// omitted, effort, context edits, typed and deferred tools, a structured format.
		`{"model":"fake","max_tokens":32000,"messages":[{"role":"user","content":"Say hi"},{"role":"system","content":[{"type":"text","text":"# Env","cache_control":{"type":"ephemeral"}}]}],` +
			`"thinking":{"type":"adaptive","display":"omitted"},"output_config":{"effort":"high"},"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},` +
			`"tools":[{"type":"web_search_20250305","name":"web_search"},{"name":"d","input_schema":{"type":"object"},"defer_loading":true}]}`,
		body(`"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}},"context_management":{"edits":[{"type":"clear_tool_uses_20250919"}]}`),
		`{"model":"fake","max_tokens":10,"messages":[{"role":"assistant","content":"prefill"}]}`,
		`{"model":"fake","max_tokens":0,"messages":[{"role":"user","content":"x"}]}`,
		`{"model":"nope","max_tokens":10,"messages":[]}`,
		`{"model":"fake","messages":[{"role":"user","content":"x"}]}`,
		`[]`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	fuzzBodies(f, h, "/v1/messages")
}

// FuzzCountTokens fuzzes POST /v1/messages/count_tokens bodies the same way.
func FuzzCountTokens(f *testing.F) {
	fx := setup(f, config{template: servertest.ToolTemplate})
	for _, s := range []string{
		`{"model":"fake","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"fake","system":"Be brief.","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],` +
			`"tools":[{"name":"t","input_schema":{"type":"object"}}],"thinking":{"type":"enabled","budget_tokens":1024}}`,
		`{"model":"fake","messages":[]}`, `{"messages":[{"role":"user","content":"x"}]}`, `{`,
	} {
		f.Add([]byte(s))
	}
	fuzzBodies(f, fx.srv.Config.Handler, "/v1/messages/count_tokens")
}

// fuzzBodies fuzzes the body of POST path: whatever the bytes, the reply is never a 5xx, a
// 2xx parses, and a 4xx is Anthropic's error object with a request id.
func fuzzBodies(f *testing.F, h http.Handler, path string) {
	f.Fuzz(func(t *testing.T, b []byte) {
		rec := servertest.Serve(h, "POST", path, b, "x-api-key", "x", "anthropic-version", "2023-06-01")
		servertest.CheckReply(t, rec)
		if rec.Code >= 400 {
			parseError(t, rec.Body.Bytes())
		}
	})
}
