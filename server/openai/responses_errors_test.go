package openai_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// respError is an OpenAI error body; Param and Code are "" for null.
type respError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// checkRespError asserts the status and every field of an OpenAI error body.
func checkRespError(t *testing.T, resp *http.Response, b []byte, status int, typ, param, code, msg string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Errorf("status %d, want %d; body %s", resp.StatusCode, status, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q", ct)
	}
	var env struct {
		Error *respError `json:"error"`
	}
	if err := json.Unmarshal(b, &env); err != nil || env.Error == nil {
		t.Fatalf("not an OpenAI error body: %s", b)
	}
	e := env.Error
	deref := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	if e.Type != typ || deref(e.Param) != param || deref(e.Code) != code || !strings.Contains(e.Message, msg) {
		t.Errorf("error = {type %q param %q code %q message %q}, want {%q %q %q containing %q}",
			e.Type, deref(e.Param), deref(e.Code), e.Message, typ, param, code, msg)
	}
}

func TestResponsesBadInput(t *testing.T) {
	s := newResponsesServer(t)
	// A response to delete, and a chain r1 ← r2 ← r3 whose middle is then deleted.
	newResp := func(prev string) string {
		t.Helper()
		p := responses.ResponseNewParams{Model: "fake", Input: text("hi")}
		if prev != "" {
			p.PreviousResponseID = openai.String(prev)
		}
		r, err := s.client.Responses.New(t.Context(), p)
		if err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	deleted, r1 := newResp(""), newResp("")
	r2 := newResp(r1)
	r3 := newResp(r2)
	for _, id := range []string{deleted, r2} {
		if err := s.client.Responses.Delete(t.Context(), id); err != nil {
			t.Fatal(err)
		}
	}

	const bad, ir = http.StatusBadRequest, "invalid_request_error"
	call := func(args string) string {
		return `{"type":"function_call","call_id":"call_1","name":"f","arguments":` + args + `}`
	}
	fn := func(params string) string { return `{"type":"function","name":"f","parameters":` + params + `}` }
	deep := strings.Repeat(`{"type":"object","properties":{"a":`, 10000) + `{"type":"string"}` + strings.Repeat("}}", 10000)
	tests := []struct {
		name, method, path, body string
		status                   int
		param, code, msg         string
	}{
		{"malformed JSON", "POST", "/v1/responses", `{"model":"fake","input":`, bad, "", "", "malformed JSON"},
		{"empty body", "POST", "/v1/responses", ``, bad, "", "", "empty"},
		{"missing model", "POST", "/v1/responses", `{"input":"hi"}`, bad, "model", "", "model"},
		{"unknown model", "POST", "/v1/responses", `{"model":"nope","input":"hi"}`, http.StatusNotFound, "model", "model_not_found", "nope"},
		{"missing input", "POST", "/v1/responses", `{"model":"fake"}`, bad, "input", "", "provide input"},
		{"input a number", "POST", "/v1/responses", `{"model":"fake","input":42}`, bad, "input", "", "got number"},
		{"input empty array", "POST", "/v1/responses", `{"model":"fake","input":[]}`, bad, "input", "", "empty"},
		{"item not an object", "POST", "/v1/responses", `{"model":"fake","input":["hi"]}`, bad, "input[0]", "", "got string"},
		{"bad role", "POST", "/v1/responses", `{"model":"fake","input":[{"role":"tool","content":"x"}]}`, bad, "input[0].role", "", `"tool"`},
		{"content a number", "POST", "/v1/responses", `{"model":"fake","input":[{"role":"user","content":7}]}`, bad, "input[0].content", "", "got number"},
		{"input_image part", "POST", "/v1/responses",
			`{"model":"fake","input":[{"role":"user","content":[{"type":"input_text","text":"see"},{"type":"input_image","image_url":"data:image/png;base64,AA"}]}]}`,
			bad, "input[0].content[1]", "unsupported_input", "is an image, and the model fake cannot take it"},
		{"unknown part type", "POST", "/v1/responses", `{"model":"fake","input":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`,
			bad, "input[0].content[0].type", "", "input_text"},
		{"unknown item type", "POST", "/v1/responses", `{"model":"fake","input":[{"type":"web_search_call","id":"ws_1"}]}`,
			bad, "input[0].type", "unsupported_input", "function_call_output"},
		{"item_reference", "POST", "/v1/responses", `{"model":"fake","input":[{"type":"item_reference","id":"msg_1"}]}`,
			bad, "input[0].type", "unsupported_input", "previous_response_id"},
		{"function_call_output answering no call", "POST", "/v1/responses", `{"model":"fake","input":[{"type":"function_call_output","call_id":"c","output":"x"}]}`,
			bad, "input[0].call_id", "", "No tool call found for function call output with call_id c"},
		{"function_call_output without output", "POST", "/v1/responses", `{"model":"fake","input":[` + call(`"{}"`) + `,{"type":"function_call_output","call_id":"call_1"}]}`,
			bad, "input[1].output", "", "missing"},
		{"function_call_output an image", "POST", "/v1/responses", `{"model":"fake","input":[` + call(`"{}"`) +
			`,{"type":"function_call_output","call_id":"call_1","output":[{"type":"input_image","image_url":"data:image/png;base64,AA"}]}]}`,
			bad, "input[1].output[0]", "unsupported_input", "is an image, and the model fake cannot take it"},
		{"function_call arguments not an object", "POST", "/v1/responses", `{"model":"fake","input":[{"role":"user","content":"x"},` + call(`"[1, 2]"`) + `]}`,
			bad, "input[1].arguments", "", "not a JSON object"},
		{"function_call arguments not JSON", "POST", "/v1/responses", `{"model":"fake","input":[` + call(`"{city: Oslo"`) + `]}`,
			bad, "input[0].arguments", "", "not a JSON object"},
		{"function_call arguments an object, not a string", "POST", "/v1/responses", `{"model":"fake","input":[` + call(`{"city":"Oslo"}`) + `]}`,
			bad, "input[0].arguments", "", "must be a string"},
		{"function_call without call_id", "POST", "/v1/responses", `{"model":"fake","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`,
			bad, "input[0].call_id", "", "call_id"},
		{"reasoning with a bad part", "POST", "/v1/responses", `{"model":"fake","input":[{"type":"reasoning","summary":[{"type":"text","text":"x"}]}]}`,
			bad, "input[0].summary[0]", "", "summary_text"},
		{"chat-style nested tool", "POST", "/v1/responses", `{"model":"fake","input":"hi","tools":[{"type":"function","function":{"name":"f"}}]}`,
			bad, "tools[0].name", "", "flat"},
		{"tool parameters not an object", "POST", "/v1/responses", `{"model":"fake","input":"hi","tools":[` + fn(`"string"`) + `]}`,
			bad, "tools[0].parameters", "", "JSON Schema object"},
		{"tool schema 10,000 levels deep", "POST", "/v1/responses", `{"model":"fake","input":"hi","tools":[` + fn(deep) + `]}`,
			bad, "", "", "depth"},
		{"tool name with spaces", "POST", "/v1/responses", `{"model":"fake","input":"hi","tools":[{"type":"function","name":"get weather"}]}`,
			bad, "tools[0].name", "", "letters, digits"},
		{"tool_choice naming an unknown function", "POST", "/v1/responses", `{"model":"fake","input":"hi","tools":[` + fn(`{"type":"object"}`) + `],"tool_choice":{"type":"function","name":"g"}}`,
			bad, "tool_choice", "", `"g", which is not in tools`},
		{"tool_choice required without tools", "POST", "/v1/responses", `{"model":"fake","input":"hi","tool_choice":"required"}`,
			bad, "tool_choice", "", "no tools"},
		{"tool_choice any", "POST", "/v1/responses", `{"model":"fake","input":"hi","tool_choice":"any"}`, bad, "tool_choice", "", "auto, none, required"},
		{"tool_choice allowed_tools mode any", "POST", "/v1/responses", `{"model":"fake","input":"hi","tool_choice":{"type":"allowed_tools","mode":"any","tools":[]}}`,
			bad, "tool_choice.mode", "", "auto or required"},
		{"tool_choice allowed_tools naming an unknown tool", "POST", "/v1/responses", `{"model":"fake","input":"hi","tools":[` + fn(`{"type":"object"}`) + `],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"g"}]}}`,
			bad, "tool_choice.tools[0]", "", `"g", which is not in tools`},
		{"tool_choice allowed_tools required of none", "POST", "/v1/responses", `{"model":"fake","input":"hi","tools":[` + fn(`{"type":"object"}`) + `],"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"web_search"}]}}`,
			bad, "tool_choice.tools", "", "lists none"},
		{"top_logprobs 21", "POST", "/v1/responses", `{"model":"fake","input":"hi","top_logprobs":21,"include":["message.output_text.logprobs"]}`,
			bad, "top_logprobs", "", "between 0 and 20, got 21"},
		{"top_logprobs -1", "POST", "/v1/responses", `{"model":"fake","input":"hi","top_logprobs":-1}`, bad, "top_logprobs", "", "between 0 and 20"},
		{"reasoning.effort banana", "POST", "/v1/responses", `{"model":"fake","input":"hi","reasoning":{"effort":"banana"}}`,
			bad, "reasoning.effort", "", "low, medium, high"},
		{"reserved chat_template_kwargs", "POST", "/v1/responses", `{"model":"fake","input":"hi","chat_template_kwargs":{"tools":[]}}`,
			bad, "", "", "set by the server"},
		{"json_schema without schema", "POST", "/v1/responses", `{"model":"fake","input":"hi","text":{"format":{"type":"json_schema","name":"x"}}}`,
			bad, "text.format.schema", "", "needs a schema"},
		{"text.format yaml", "POST", "/v1/responses", `{"model":"fake","input":"hi","text":{"format":{"type":"yaml"}}}`,
			bad, "text.format.type", "", `"yaml"`},
		{"background", "POST", "/v1/responses", `{"model":"fake","input":"hi","background":true}`, bad, "background", "unsupported_parameter", "background"},
		{"max_output_tokens 0", "POST", "/v1/responses", `{"model":"fake","input":"hi","max_output_tokens":0}`, bad, "max_output_tokens", "", "positive"},
		{"max_output_tokens a string", "POST", "/v1/responses", `{"model":"fake","input":"hi","max_output_tokens":"5"}`, bad, "max_output_tokens", "", "integer"},
		{"temperature 3", "POST", "/v1/responses", `{"model":"fake","input":"hi","temperature":3}`, bad, "temperature", "", "between 0 and 2"},
		{"top_p 2", "POST", "/v1/responses", `{"model":"fake","input":"hi","top_p":2}`, bad, "top_p", "", "between 0 and 1"},
		{"truncation", "POST", "/v1/responses", `{"model":"fake","input":"hi","truncation":"middle"}`, bad, "truncation", "", "disabled or auto"},
		{"metadata value a number", "POST", "/v1/responses", `{"model":"fake","input":"hi","metadata":{"a":1}}`, bad, "metadata", "", "expected a string"},
		{"previous unknown", "POST", "/v1/responses", `{"model":"fake","input":"hi","previous_response_id":"resp_nope"}`,
			http.StatusNotFound, "previous_response_id", "previous_response_not_found", "Previous response with id 'resp_nope' not found."},
		{"previous deleted", "POST", "/v1/responses", `{"model":"fake","input":"hi","previous_response_id":"` + deleted + `"}`,
			http.StatusNotFound, "previous_response_id", "previous_response_not_found", "Previous response with id '" + deleted + "' not found."},
		{"previous continues a deleted one", "POST", "/v1/responses", `{"model":"fake","input":"hi","previous_response_id":"` + r3 + `"}`,
			http.StatusNotFound, "previous_response_id", "previous_response_not_found", "includes response '" + r2 + "', which was deleted"},
		{"GET unknown", "GET", "/v1/responses/resp_nope", "", http.StatusNotFound, "", "", "Response with id 'resp_nope' not found."},
		{"GET deleted", "GET", "/v1/responses/" + deleted, "", http.StatusNotFound, "", "", "not found"},
		{"DELETE unknown", "DELETE", "/v1/responses/resp_nope", "", http.StatusNotFound, "", "", "not found"},
		{"input_items unknown", "GET", "/v1/responses/resp_nope/input_items", "", http.StatusNotFound, "", "", "not found"},
		{"input_items limit 0", "GET", "/v1/responses/" + r1 + "/input_items?limit=0", "", bad, "limit", "", "between 1 and 100"},
		{"input_items order", "GET", "/v1/responses/" + r1 + "/input_items?order=sideways", "", bad, "order", "", "asc or desc"},
		{"input_items after unknown", "GET", "/v1/responses/" + r1 + "/input_items?after=msg_nope", "", bad, "after", "", "msg_nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := s.raw(t, tt.method, tt.path, tt.body)
			checkRespError(t, resp, b, tt.status, ir, tt.param, tt.code, tt.msg)
		})
	}
	if n := len(s.eng.Requests()); n != 4 {
		t.Errorf("the engine saw %d generations, want only the 4 setup ones", n)
	}

	// The SDK sees the 404 as an *openai.Error.
	_, err := s.client.Responses.New(t.Context(), responses.ResponseNewParams{Model: "fake", Input: text("hi"), PreviousResponseID: openai.String(deleted)})
	if !isStatus(err, http.StatusNotFound) {
		t.Errorf("SDK: %v, want a 404 *openai.Error", err)
	}
}

// TestResponsesContextLength: an input over the window is a 400 that blames input, streamed or not.
func TestResponsesContextLength(t *testing.T) {
	s := startResponses(t, filepath.Join(t.TempDir(), "db.sqlite"), 64, nil)
	long := strings.Repeat("x", 100)
	for _, stream := range []string{"false", "true"} {
		resp, b := s.raw(t, "POST", "/v1/responses", `{"model":"fake","truncation":"auto","stream":`+stream+`,"input":"`+long+`"}`)
		checkRespError(t, resp, b, http.StatusBadRequest, "invalid_request_error", "input", "context_length_exceeded", "context window")
	}
}
