package ollama_test

import (
	"encoding/json"
	"testing"

	"github.com/superfluid/superfluid/server/servertest"
)

// fuzzRoute fuzzes the body of POST path on the real router over the fake engine: whatever the
// bytes, the reply is never a 5xx, a 2xx parses, and a 4xx is Ollama's {"error": "..."}.
func fuzzRoute(f *testing.F, path string, seeds []string) {
	fx := setup(f, config{template: servertest.ToolTemplate, fim: true})
	h := fx.srv.Config.Handler
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rec := servertest.Serve(h, "POST", path, b)
		servertest.CheckReply(t, rec)
		if rec.Code >= 400 {
			var e map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || len(e) != 1 {
				t.Fatalf(`status %d: error body is not {"error": "..."}: %s`, rec.Code, rec.Body.Bytes())
			}
			if s, ok := e["error"].(string); !ok || s == "" {
				t.Fatalf(`status %d: error body is not {"error": "..."}: %s`, rec.Code, rec.Body.Bytes())
			}
		}
	})
}

// FuzzChat fuzzes POST /api/chat bodies.
func FuzzChat(f *testing.F) {
	fuzzRoute(f, "/api/chat", []string{
		`{"model":"fake","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"fake","stream":false,"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}],"options":{"temperature":0.1,"num_predict":4,"stop":["wor"],"seed":3,"num_ctx":512}}`,
		`{"model":"fake","stream":false,"format":"json","messages":[{"role":"user","content":"hi"}],"keep_alive":"10m"}`,
		`{"model":"fake","stream":false,"format":{"type":"object","properties":{"a":{"type":"string"}}},"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"fake","messages":[{"role":"user","content":"weather?"},{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris"}}}]},` +
			`{"role":"tool","content":"21C","tool_name":"get_weather"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`,
		`{"model":"fake","messages":[{"role":"user","content":"hi","images":["AA=="]}]}`,
		`{"model":"fake","think":true,"messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":2}`,
		`{"model":"fake","messages":[],"keep_alive":0}`,
		`{"model":"nope","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"fake"}`, `[]`, `{`, ``,
	})
}

// FuzzGenerate fuzzes POST /api/generate bodies.
func FuzzGenerate(f *testing.F) {
	fuzzRoute(f, "/api/generate", []string{
		`{"model":"fake","prompt":"hi"}`,
		`{"model":"fake","prompt":"hi","raw":true,"stream":false,"options":{"num_predict":3,"top_k":2,"repeat_penalty":1.1}}`,
		`{"model":"fake","prompt":"def f(","suffix":"    return x","stream":false}`,
		`{"model":"fake","prompt":"hi","system":"Be brief.","template":"{{ .Prompt }}","context":[1,2,3]}`,
		`{"model":"fake","prompt":"hi","format":"json","images":["AA=="],"think":false}`,
		`{"model":"fake","prompt":"","keep_alive":"0s"}`,
		`{"model":"fake"}`, `{"model":"nope","prompt":"x"}`, `[]`, `{`, ``,
	})
}
