package anthropic_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/superfluid/superfluid/runtime/enginetest"
	sfanthropic "github.com/superfluid/superfluid/server/anthropic"
	"github.com/superfluid/superfluid/server/servertest"
)

const invalidReq = "invalid_request_error"

// msgs is a request with the given messages array and a valid rest.
func msgs(messages string) string {
	return `{"model":"fake","max_tokens":10,"messages":` + messages + `}`
}

func TestMessagesBadInput(t *testing.T) {
	f := setup(t, config{})
	tests := []struct {
		name string
		body string
		want wantError
	}{
		{"missing max_tokens", `{"model":"fake","messages":[{"role":"user","content":"x"}]}`, wantError{400, invalidReq, "max_tokens: Field required"}},
		{"max_tokens 0", `{"model":"fake","max_tokens":0,"messages":[{"role":"user","content":"x"}]}`,
			wantError{400, invalidReq, "max_tokens: Input should be greater than or equal to 1"}},
		{"max_tokens a string", `{"model":"fake","max_tokens":"10","messages":[{"role":"user","content":"x"}]}`,
			wantError{400, invalidReq, "max_tokens: Input should be a valid integer"}},
		{"max_tokens fractional", `{"model":"fake","max_tokens":1.5,"messages":[{"role":"user","content":"x"}]}`,
			wantError{400, invalidReq, "max_tokens: Input should be a valid integer"}},
		{"missing model", `{"max_tokens":10,"messages":[{"role":"user","content":"x"}]}`, wantError{400, invalidReq, "model: Field required"}},
		{"model a number", `{"model":7,"max_tokens":10,"messages":[{"role":"user","content":"x"}]}`, wantError{400, invalidReq, "model: Input should be a valid string"}},
		{"unknown model", `{"model":"nope","max_tokens":10,"messages":[{"role":"user","content":"x"}]}`, wantError{404, "not_found_error", `"nope"`}},
		{"missing messages", `{"model":"fake","max_tokens":10}`, wantError{400, invalidReq, "messages: Field required"}},
		{"empty messages", msgs(`[]`), wantError{400, invalidReq, "messages: at least one message is required"}},
		{"messages a string", msgs(`"x"`), wantError{400, invalidReq, "messages: Input should be a valid list"}},
		{"message a string", msgs(`["x"]`), wantError{400, invalidReq, "messages: Input should be a valid dictionary"}},
		{"role tool", msgs(`[{"role":"user","content":"x"},{"role":"tool","content":"y"}]`),
			wantError{400, invalidReq, `messages.1.role: Input should be 'user', 'assistant' or 'system', got "tool"`}},
		{"system message with an image", msgs(`[{"role":"user","content":"x"},{"role":"system","content":[{"type":"image"}]}]`),
			wantError{400, invalidReq, "messages.1.content.0: image blocks go in user messages"}},
		{"system message without content", msgs(`[{"role":"user","content":"x"},{"role":"system"}]`),
			wantError{400, invalidReq, "messages.1.content: Field required"}},
		{"role missing", msgs(`[{"content":"x"}]`), wantError{400, invalidReq, "messages.0.role: Field required"}},
		{"content missing", msgs(`[{"role":"user"}]`), wantError{400, invalidReq, "messages.0.content: Field required"}},
		{"content a number", msgs(`[{"role":"user","content":5}]`),
			wantError{400, invalidReq, "messages.0.content: Input should be a valid string or a list of content blocks, got a number"}},
		{"block a string", msgs(`[{"role":"user","content":["x"]}]`), wantError{400, invalidReq, "messages.0.content.0: Input should be a content block"}},
		{"text block without text", msgs(`[{"role":"user","content":[{"type":"text"}]}]`), wantError{400, invalidReq, "messages.0.content.0.text: Field required"}},
		{"block without type", msgs(`[{"role":"user","content":[{"text":"x"}]}]`), wantError{400, invalidReq, "messages.0.content.0.type: Field required"}},
		{"unknown block", msgs(`[{"role":"user","content":[{"type":"video"}]}]`), wantError{400, invalidReq, `unknown content block type "video"`}},
		{"image block", msgs(`[{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}]`),
			wantError{400, invalidReq, "messages.0.content.1 is an image, and the model fake cannot take it (it has no vision projector)"}},
		{"document block", msgs(`[{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"x"}}]}]`),
			wantError{400, invalidReq, "document content blocks are not supported"}},
		{"final tool_use", msgs(`[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]}]`),
			wantError{400, invalidReq, "messages.1: the final assistant message has tool_use blocks without their results"}},
		{"tool_result in assistant", msgs(`[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"t","content":"4"}]},{"role":"user","content":"y"}]`),
			wantError{400, invalidReq, "messages.1.content.0: tool_result blocks belong in user messages"}},
		{"system image block", `{"model":"fake","max_tokens":10,"system":[{"type":"image"}],"messages":[{"role":"user","content":"x"}]}`,
			wantError{400, invalidReq, "system.0: image blocks go in user messages"}},
		{"system a number", `{"model":"fake","max_tokens":10,"system":5,"messages":[{"role":"user","content":"x"}]}`,
			wantError{400, invalidReq, "system: Input should be a valid string or a list of content blocks"}},
		{"assistant prefill", msgs(`[{"role":"user","content":"x"},{"role":"assistant","content":"The answer is"}]`),
			wantError{400, invalidReq, "messages.1: a final assistant message (prefill) is not supported"}},
		{"temperature 1.5", body(`"temperature":1.5`), wantError{400, invalidReq, "temperature: Input should be between 0 and 1"}},
		{"temperature a string", body(`"temperature":"hot"`), wantError{400, invalidReq, "temperature: Input should be a valid number"}},
		{"top_p -0.1", body(`"top_p":-0.1`), wantError{400, invalidReq, "top_p: Input should be between 0 and 1"}},
		{"top_k -1", body(`"top_k":-1`), wantError{400, invalidReq, "top_k: Input should be greater than or equal to 0"}},
		{"stop_sequences a string", body(`"stop_sequences":"x"`), wantError{400, invalidReq, "stop_sequences: Input should be a valid list"}},
		{"stream a string", body(`"stream":"yes"`), wantError{400, invalidReq, "stream: Input should be a valid boolean"}},
		{"thinking budget too small", body(`"thinking":{"type":"enabled","budget_tokens":100}`),
			wantError{400, invalidReq, "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"}},
		{"malformed JSON", `{"model":"fake",`, wantError{400, invalidReq, "not valid JSON"}},
		{"trailing garbage", body("") + "}", wantError{400, invalidReq, "not valid JSON"}},
		{"empty body", ``, wantError{400, invalidReq, "empty"}},
		{"JSON array", `[{"model":"fake"}]`, wantError{400, invalidReq, "JSON object"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := f.do(t, http.MethodPost, "/v1/messages", tt.body)
			checkError(t, resp, b, tt.want)
			// A message about a field starts with the field's wire path, as Anthropic's do.
			if path, _, ok := strings.Cut(tt.want.msg, ": "); ok && !strings.Contains(path, " ") {
				if e := parseError(t, b); !strings.HasPrefix(e.Error.Message, tt.want.msg) {
					t.Errorf("error.message = %q, want it to start with %q", e.Error.Message, tt.want.msg)
				}
			}
		})
	}
	if n := len(f.eng.Requests()); n != 0 {
		t.Errorf("bad requests reached the engine %d times", n)
	}
	// Accepted: the neutral values of refused fields, metadata, unknown fields.
	for _, extra := range []string{`"tools":[]`, `"tools":null`, `"thinking":{"type":"disabled"}`, `"metadata":{"user_id":"u"}`,
		`"metadata":{"user_id":"{\"device_id\":\"d\",\"session_id\":\"s\"}"}`, `"output_config":{"effort":"low"}`, `"output_config":{}`,
		`"system":null`, `"system":[]`, `"unknown_field":{"x":1}`, `"stop_sequences":[]`, `"context_management":{"edits":[]}`, `"context_management":null`} {
		resp, b := f.do(t, http.MethodPost, "/v1/messages", body(extra))
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d: %s", extra, resp.StatusCode, b)
		}
	}
}

func TestCountTokensBadInput(t *testing.T) {
	f := setup(t, config{})
	tests := []struct {
		name string
		body string
		want wantError
	}{
		{"missing model", `{"messages":[{"role":"user","content":"x"}]}`, wantError{400, invalidReq, "model: Field required"}},
		{"unknown model", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`, wantError{404, "not_found_error", `"nope"`}},
		{"missing messages", `{"model":"fake"}`, wantError{400, invalidReq, "messages: Field required"}},
		{"role tool", `{"model":"fake","messages":[{"role":"tool","content":"x"}]}`, wantError{400, invalidReq, "messages.0.role"}},
		{"image block without a source", `{"model":"fake","messages":[{"role":"user","content":[{"type":"image"}]}]}`, wantError{400, invalidReq, "messages.0.content.0.source: Field required"}},
		{"malformed JSON", `{`, wantError{400, invalidReq, "not valid JSON"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := f.do(t, http.MethodPost, "/v1/messages/count_tokens", tt.body)
			checkError(t, resp, b, tt.want)
		})
	}
	// max_tokens is not needed to count.
	resp, b := f.do(t, http.MethodPost, "/v1/messages/count_tokens", `{"model":"fake","messages":[{"role":"user","content":"x"}]}`)
	if resp.StatusCode != http.StatusOK || string(b) != `{"input_tokens":`+strconv.Itoa(len(rendered("", "x"))+1)+`}` {
		t.Errorf("count: %d %s", resp.StatusCode, b)
	}
}

func TestMethodNotAllowed(t *testing.T) {
	f := setup(t, config{})
	for _, path := range []string{"/v1/messages", "/v1/messages/count_tokens"} {
		resp, b := f.do(t, http.MethodGet, path, "")
		checkError(t, resp, b, wantError{405, invalidReq, "GET is not allowed on " + path})
		if a := resp.Header.Get("Allow"); a != "POST" {
			t.Errorf("Allow %q", a)
		}
	}
}

func TestPromptTooLong(t *testing.T) {
	f := setup(t, config{ctx: 64})
	long := strings.Repeat("x", 200)
	prompt := len(rendered("", long)) + 1
	resp, b := f.do(t, http.MethodPost, "/v1/messages", msgs(`[{"role":"user","content":"`+long+`"}]`))
	checkError(t, resp, b, wantError{400, invalidReq, "prompt is too long: " + strconv.Itoa(prompt) + " tokens > 64 maximum"})
}

func TestBodyTooLarge(t *testing.T) {
	f := setup(t, config{})
	const size = sfanthropic.MaxBodyBytes + 1
	for _, chunked := range []bool{false, true} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, f.srv.URL+"/v1/messages",
			io.NopCloser(io.LimitReader(endless{}, size)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if chunked {
			req.ContentLength = -1 // unknown length: the transport sends it chunked
		} else {
			req.ContentLength = size
		}
		resp, b := servertest.Send(t, req)
		checkError(t, resp, b, wantError{413, "request_too_large", "100 MiB"})
	}
	resp, b := f.do(t, http.MethodPost, "/v1/messages", body(""))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("good request after oversized ones: %d %s", resp.StatusCode, b)
	}
}

// endless is a body of x's that never ends.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// A full queue is Anthropic's 529 overloaded_error with retry-after, and the SDK sees it so.
func TestOverloaded(t *testing.T) {
	f := setup(t, config{queue: 1, reply: strings.Repeat("x", 1000), engine: func(e *enginetest.Engine) {
		e.TokenDelay = 20 * time.Millisecond
	}})
	// Fill the lane and the queue (1 + 1) with streams held open, each admitted once its
	// message_start arrives.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for range 2 {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+"/v1/messages", strings.NewReader(body(`"stream":true`)))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil || line != "event: message_start\n" {
			t.Fatalf("first line %q, %v", line, err)
		}
	}
	resp, b := f.do(t, http.MethodPost, "/v1/messages", body(""))
	checkError(t, resp, b, wantError{529, "overloaded_error", "the server is busy"})
	if ra := resp.Header.Get("retry-after"); ra != "1" {
		t.Errorf("retry-after %q, want 1", ra)
	}
	_, err := f.client.Messages.New(t.Context(), params())
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 529 || apiErr.Type() != "overloaded_error" {
		t.Errorf("SDK error %v", err)
	}
}
