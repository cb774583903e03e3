package openai_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	sfopenai "github.com/superfluid/superfluid/server/openai"
	"github.com/superfluid/superfluid/server/servertest"
)

const invalidReq = "invalid_request_error"

func TestChatBadInput(t *testing.T) {
	f := setup(t, config{})
	tests := []struct {
		name string
		body string
		want wantError
	}{
		{"malformed JSON", `{"model":"fake",`, wantError{400, invalidReq, "", "", "malformed JSON"}},
		{"trailing garbage", chatBody("") + "}", wantError{400, invalidReq, "", "", "malformed JSON"}},
		{"empty body", ``, wantError{400, invalidReq, "", "", "empty"}},
		{"whitespace body", " \n\t", wantError{400, invalidReq, "", "", "empty"}},
		{"JSON array", `[{"model":"fake"}]`, wantError{400, invalidReq, "", "", "JSON object"}},
		{"JSON string", `"hi"`, wantError{400, invalidReq, "", "", "JSON object"}},
		{"messages a string", `{"model":"fake","messages":"x"}`, wantError{400, invalidReq, "messages", "", "messages"}},
		{"model a number", `{"model":7,"messages":[{"role":"user","content":"x"}]}`, wantError{400, invalidReq, "model", "", "string"}},
		{"max_tokens a string", chatBody(`"max_tokens":"10"`), wantError{400, invalidReq, "max_tokens", "", "integer"}},
		{"max_tokens fractional", chatBody(`"max_tokens":1.5`), wantError{400, invalidReq, "max_tokens", "", "integer"}},
		{"max_tokens negative", chatBody(`"max_tokens":-1`), wantError{400, invalidReq, "max_tokens", "", "-1"}},
		{"max_completion_tokens negative", chatBody(`"max_completion_tokens":-5`), wantError{400, invalidReq, "max_completion_tokens", "", "-5"}},
		{"max_tokens zero", chatBody(`"max_tokens":0`), wantError{400, invalidReq, "max_tokens", "", "at least 1"}},
		{"temperature -1", chatBody(`"temperature":-1`), wantError{400, invalidReq, "temperature", "", "between 0 and 2"}},
		{"temperature 3", chatBody(`"temperature":3`), wantError{400, invalidReq, "temperature", "", "between 0 and 2"}},
		{"temperature a string", chatBody(`"temperature":"hot"`), wantError{400, invalidReq, "temperature", "", "number"}},
		{"n 0", chatBody(`"n":0`), wantError{400, invalidReq, "n", "", "between 1 and 128"}},
		{"n 129", chatBody(`"n":129`), wantError{400, invalidReq, "n", "", "between 1 and 128"}},
		{"top_p 1.5", chatBody(`"top_p":1.5`), wantError{400, invalidReq, "top_p", "", "top_p"}},
		{"min_p -0.1", chatBody(`"min_p":-0.1`), wantError{400, invalidReq, "min_p", "", "min_p"}},
		{"top_k negative", chatBody(`"top_k":-1`), wantError{400, invalidReq, "top_k", "", "top_k"}},
		{"presence_penalty 3", chatBody(`"presence_penalty":3`), wantError{400, invalidReq, "presence_penalty", "", "between -2 and 2"}},
		{"frequency_penalty -3", chatBody(`"frequency_penalty":-3`), wantError{400, invalidReq, "frequency_penalty", "", "between -2 and 2"}},
		{"logit_bias non-integer key", chatBody(`"logit_bias":{"abc":1}`), wantError{400, invalidReq, "logit_bias", "", `"abc"`}},
		{"logit_bias negative key", chatBody(`"logit_bias":{"-3":1}`), wantError{400, invalidReq, "logit_bias", "", `"-3"`}},
		{"logit_bias value 101", chatBody(`"logit_bias":{"5":101}`), wantError{400, invalidReq, "logit_bias", "", "between -100 and 100"}},
		{"stop a number", chatBody(`"stop":5`), wantError{400, invalidReq, "stop", "", "stop"}},
		{"missing model", `{"messages":[{"role":"user","content":"x"}]}`, wantError{400, invalidReq, "model", "", "model"}},
		{"empty model", `{"model":"","messages":[{"role":"user","content":"x"}]}`, wantError{400, invalidReq, "model", "", "model"}},
		{"missing messages", `{"model":"fake"}`, wantError{400, invalidReq, "messages", "", "messages"}},
		{"empty messages", `{"model":"fake","messages":[]}`, wantError{400, invalidReq, "messages", "", "non-empty"}},
		{"unknown role", `{"model":"fake","messages":[{"role":"user","content":"x"},{"role":"robot","content":"y"}]}`,
			wantError{400, invalidReq, "messages[1].role", "", `"robot"`}},
		{"content a number", `{"model":"fake","messages":[{"role":"user","content":5}]}`, wantError{400, invalidReq, "messages.content", "", "string"}},
		{"text part without text", `{"model":"fake","messages":[{"role":"user","content":[{"type":"text"}]}]}`,
			wantError{400, invalidReq, "messages.content", "", ""}},
		{"unknown model", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`,
			wantError{404, invalidReq, "model", "model_not_found", `"nope"`}},
		{"image_url part", `{"model":"fake","messages":[{"role":"user","content":[{"type":"text","text":"what is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]}`,
			wantError{400, invalidReq, "messages[0].content[1]", "unsupported_input", "messages[0].content[1] is an image, and the model fake cannot take it"}},
		{"input_audio part", `{"model":"fake","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}]}]}`,
			wantError{400, invalidReq, "messages[0].content[0]", "unsupported_input", "messages[0].content[0] is an audio clip, and the model fake cannot take it"}},
		{"tools not objects", chatBody(`"tools":[{"type":"retrieval"}]`), wantError{400, invalidReq, "tools[0]", "", "only function tools"}},
		{"top_logprobs without logprobs", chatBody(`"top_logprobs":3`), wantError{400, invalidReq, "top_logprobs", "", "needs logprobs"}},
		{"response_format unknown type", chatBody(`"response_format":{"type":"xml"}`),
			wantError{400, invalidReq, "response_format.type", "", "xml"}},
		{"response_format json_schema without schema", chatBody(`"response_format":{"type":"json_schema"}`),
			wantError{400, invalidReq, "response_format.json_schema", "", "schema"}},
		{"unknown model streaming", `{"model":"nope","stream":true,"messages":[{"role":"user","content":"x"}]}`,
			wantError{404, invalidReq, "model", "model_not_found", `"nope"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := f.do(t, http.MethodPost, "/v1/chat/completions", tt.body)
			checkError(t, resp, b, tt.want)
		})
	}
	// Accepted as no-ops, not refused: the neutral values of refused parameters.
	for _, extra := range []string{`"logprobs":false`, `"top_logprobs":0`, `"tools":[]`, `"tools":null`, `"response_format":{"type":"text"}`, `"unknown_field":{"x":1}`} {
		resp, b := f.do(t, http.MethodPost, "/v1/chat/completions", chatBody(extra))
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d, want 200: %s", extra, resp.StatusCode, b)
		}
	}
	// The server survived every bad input.
	resp, b := f.do(t, http.MethodPost, "/v1/chat/completions", chatBody(""))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), defaultReply) {
		t.Fatalf("good request after bad ones: %d %s", resp.StatusCode, b)
	}
}

func TestRoutes(t *testing.T) {
	f := setup(t, config{})
	tests := []struct {
		method, path string
		want         wantError
		allow        string // the Allow header a 405 must carry
	}{
		{"GET", "/v1/nothing", wantError{404, invalidReq, "", "", "/v1/nothing"}, ""},
		{"POST", "/v2/chat/completions", wantError{404, invalidReq, "", "", "unknown route"}, ""},
		{"GET", "/v1/chat/completions", wantError{405, invalidReq, "", "", "GET"}, "POST"},
		{"PUT", "/v1/tokenize", wantError{405, invalidReq, "", "", "PUT"}, "POST"},
		{"POST", "/v1/models", wantError{405, invalidReq, "", "", "POST"}, "GET"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			resp, b := f.do(t, tt.method, tt.path, "")
			checkError(t, resp, b, tt.want)
			if got := resp.Header.Get("Allow"); got != tt.allow {
				t.Errorf("Allow = %q, want %q", got, tt.allow)
			}
		})
	}
}

// endless yields 'a' forever; a body that is never materialized in the test.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

func TestBodyTooLarge(t *testing.T) {
	f := setup(t, config{})
	const size = sfopenai.MaxBodyBytes + 1
	tests := []struct {
		name    string
		chunked bool
	}{
		{"content-length", false},
		{"chunked", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, f.srv.URL+"/v1/chat/completions",
				io.NopCloser(io.LimitReader(endless{}, size)))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			if tt.chunked {
				req.ContentLength = -1 // unknown length: the transport sends it chunked
			} else {
				req.ContentLength = size
			}
			resp, b := servertest.Send(t, req)
			checkError(t, resp, b, wantError{413, invalidReq, "", "payload_too_large", strconv.Itoa(sfopenai.MaxBodyBytes>>20) + " MiB"})
		})
	}
	resp, b := f.do(t, http.MethodPost, "/v1/chat/completions", chatBody(""))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("good request after oversized ones: %d %s", resp.StatusCode, b)
	}
}

func TestContextLengthExceeded(t *testing.T) {
	f := setup(t, config{ctx: 64})
	long := strings.Repeat("x", 200)
	for _, stream := range []bool{false, true} {
		t.Run("stream="+strconv.FormatBool(stream), func(t *testing.T) {
			body := `{"model":"fake","stream":` + strconv.FormatBool(stream) + `,"messages":[{"role":"user","content":"` + long + `"}]}`
			resp, b := f.do(t, http.MethodPost, "/v1/chat/completions", body)
			// 201 = 200 bytes + BOS, against a window of 64.
			checkError(t, resp, b, wantError{400, invalidReq, "messages", "context_length_exceeded", "201 tokens"})
		})
	}
	// A prompt that fits still works on the small window, cut at the window.
	resp, b := f.do(t, http.MethodPost, "/v1/chat/completions", chatBody(""))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("short prompt: %d %s", resp.StatusCode, b)
	}
}
