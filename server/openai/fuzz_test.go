package openai_test

import (
	"testing"

	"github.com/superfluid/superfluid/server/servertest"
)

// fuzzRoute fuzzes the body of POST path on the real router over the fake engine: whatever the
// bytes, the reply is never a 5xx, a 2xx parses, and a 4xx is OpenAI's error object.
func fuzzRoute(f *testing.F, cfg config, path string, seeds []string) {
	fx := setup(f, cfg)
	h := fx.srv.Config.Handler
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := servertest.Serve(h, "POST", path, body)
		servertest.CheckReply(t, rec)
		if rec.Code >= 400 {
			parseError(t, rec.Body.Bytes())
		}
	})
}

// toolsJSON is one function tool in the chat completions shape.
const toolsJSON = `"tools":[{"type":"function","function":{"name":"get_weather","description":"d","parameters":{"type":"object","properties":{"city":{"type":"string","enum":["Paris","Oslo"]}},"required":["city"]}}}]`

// FuzzChatCompletions fuzzes POST /v1/chat/completions bodies.
func FuzzChatCompletions(f *testing.F) {
	fuzzRoute(f, config{template: servertest.ToolTemplate}, "/v1/chat/completions", []string{
		chatBody(""),
		chatBody(`"stream":true,"stream_options":{"include_usage":true}`),
		chatBody(`"max_tokens":3,"temperature":0.5,"top_p":0.9,"stop":["wor"],"seed":7,"n":2`),
		chatBody(`"logprobs":true,"top_logprobs":2,"logit_bias":{"1":-100}`),
		chatBody(toolsJSON + `,"tool_choice":"required"`),
		chatBody(toolsJSON + `,"tool_choice":{"type":"function","function":{"name":"get_weather"}},"stream":true`),
		chatBody(`"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","properties":{"a":{"type":"integer"}}}}}`),
		chatBody(`"response_format":{"type":"json_object"},"keep_alive":"5m"`),
		`{"model":"fake","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"hi"}]},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},` +
			`{"role":"tool","tool_call_id":"call_1","content":"21C"}]}`,
		`{"model":"fake","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AA"}}]}]}`,
		`{"model":"nope","messages":[]}`,
		`{"model":"fake","messages":[{"role":"user","content":"hi"}],"chat_template_kwargs":{"enable_thinking":false},"reasoning_effort":"low"}`,
		`{"model":"fake","messages":[{"role":"user","content":"x"}],"max_completion_tokens":-1}`,
		`[]`, `{`, `null`, ``,
	})
}

// FuzzCompletions fuzzes POST /v1/completions bodies.
func FuzzCompletions(f *testing.F) {
	fuzzRoute(f, config{}, "/v1/completions", []string{
		`{"model":"fake","prompt":"Once upon a time","max_tokens":5}`,
		`{"model":"fake","prompt":["a","b"],"echo":true,"logprobs":2,"stream":true}`,
		`{"model":"fake","prompt":[1,2,3],"suffix":"end","stop":"\n","n":2,"best_of":2}`,
		`{"model":"fake","prompt":[[1,2],[3]],"temperature":0,"seed":1,"presence_penalty":1.5}`,
		`{"model":"fake","prompt":"x","stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":"fake","prompt":""}`, `{"model":"fake"}`, `{"prompt":"x"}`,
	})
}

// FuzzResponses fuzzes POST /v1/responses bodies.
func FuzzResponses(f *testing.F) {
	fuzzRoute(f, config{template: servertest.ToolTemplate}, "/v1/responses", []string{
		`{"model":"fake","input":"Say hello."}`,
		`{"model":"fake","input":"hi","instructions":"Be brief.","max_output_tokens":16,"stream":true}`,
		`{"model":"fake","input":[{"role":"user","content":[{"type":"input_text","text":"see"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]}]}`,
		`{"model":"fake","input":[{"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{\"city\":\"Oslo\"}"},{"type":"function_call_output","call_id":"c1","output":"cold"}],` +
			`"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}],"tool_choice":"auto"}`,
		`{"model":"fake","input":"x","text":{"format":{"type":"json_schema","name":"o","schema":{"type":"object","properties":{"n":{"type":"number"}}}}}}`,
		`{"model":"fake","input":"x","reasoning":{"effort":"high","summary":"auto"},"store":false,"previous_response_id":"resp_123"}`,
		`{"model":"fake","input":[{"type":"item_reference","id":"msg_1"}],"truncation":"auto","parallel_tool_calls":false}`,
		`{"model":"fake","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,AA"}]}]}`,
		`{"model":"fake","input":42}`, `{"model":"fake"}`,
	})
}
