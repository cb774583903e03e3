package anthropic_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
)

// stream collects a streamed reply through the SDK: the event types in order and the
// accumulated message.
func stream(t *testing.T, f *fixture, p anthropic.MessageNewParams) ([]string, anthropic.Message, error) {
	t.Helper()
	s := f.client.Messages.NewStreaming(t.Context(), p)
	defer s.Close()
	var types []string
	var msg anthropic.Message
	for s.Next() {
		ev := s.Current()
		types = append(types, ev.Type)
		if err := msg.Accumulate(ev); err != nil {
			t.Fatalf("accumulate %s: %v", ev.RawJSON(), err)
		}
	}
	return types, msg, s.Err()
}

// wantTypes is the event sequence for a reply of n text pieces (ping is not surfaced by the SDK).
func wantTypes(n int) []string {
	out := []string{"message_start", "content_block_start"}
	for range n {
		out = append(out, "content_block_delta")
	}
	return append(out, "content_block_stop", "message_delta", "message_stop")
}

func TestStreamSDK(t *testing.T) {
	const reply = "Streaming works."
	tests := []struct {
		name   string
		edit   func(*anthropic.MessageNewParams)
		text   string
		reason anthropic.StopReason
		seq    string
		output int64
	}{
		{"end_turn", nil, reply, anthropic.StopReasonEndTurn, "", int64(len(reply))},
		{"stop_sequence", func(p *anthropic.MessageNewParams) { p.StopSequences = []string{"works"} },
			"Streaming ", anthropic.StopReasonStopSequence, "works", int64(len("Streaming works"))},
		{"max_tokens", func(p *anthropic.MessageNewParams) { p.MaxTokens = 4 }, "Stre", anthropic.StopReasonMaxTokens, "", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t, config{reply: reply})
			p := params()
			if tt.edit != nil {
				tt.edit(&p)
			}
			types, msg, err := stream(t, f, p)
			if err != nil {
				t.Fatal(err)
			}
			// The fake emits one piece per byte, except that text which may begin a stop
			// sequence is held back: count the deltas from what arrived.
			if len(types) < 6 || strings.Join(types, ",") != strings.Join(wantTypes(len(types)-5), ",") {
				t.Errorf("events %v", types)
			}
			if !strings.HasPrefix(msg.ID, "msg_") || msg.Model != "fake" || msg.Role != "assistant" || len(msg.Content) != 1 {
				t.Errorf("message %s", msg.RawJSON())
			}
			if msg.Content[0].Type != "text" || msg.Content[0].Text != tt.text {
				t.Errorf("text %q, want %q", msg.Content[0].Text, tt.text)
			}
			if msg.StopReason != tt.reason || msg.StopSequence != tt.seq || msg.Usage.OutputTokens != tt.output {
				t.Errorf("stop %q %q output %d, want %q %q %d", msg.StopReason, msg.StopSequence, msg.Usage.OutputTokens, tt.reason, tt.seq, tt.output)
			}
			if want := int64(len(rendered("", userHello)) + 1); msg.Usage.InputTokens != want || msg.Usage.CacheReadInputTokens != 0 {
				t.Errorf("usage %+v, want input %d", msg.Usage, want)
			}
		})
	}
}

// The raw wire: headers, event names matching data types, ping after content_block_start, and
// each payload's shape.
func TestStreamWire(t *testing.T) {
	f := setup(t, config{})
	resp, b := f.do(t, http.MethodPost, "/v1/messages", body(`"stream":true`))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	if id := resp.Header.Get("request-id"); !strings.HasPrefix(id, "req_") {
		t.Errorf("request-id %q", id)
	}
	evs := parseSSE(t, b)
	var names []string
	for _, e := range evs {
		names = append(names, e.name)
	}
	want := []string{"message_start", "content_block_start", "ping"}
	for range defaultReply {
		want = append(want, "content_block_delta")
	}
	want = append(want, "content_block_stop", "message_delta", "message_stop")
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("events %v, want %v", names, want)
	}
	prompt := len(rendered("", userHello)) + 1
	wantData := map[int]string{
		1:             `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		2:             `{"type":"ping"}`,
		3:             `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"H"}}`,
		len(want) - 3: `{"type":"content_block_stop","index":0}`,
		len(want) - 2: fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},`+
			`"usage":{"input_tokens":%d,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":%d}}`, prompt, len(defaultReply)),
		len(want) - 1: `{"type":"message_stop"}`,
	}
	for i, w := range wantData {
		if evs[i].data != w {
			t.Errorf("event %d data\n got %s\nwant %s", i, evs[i].data, w)
		}
	}
	var start struct {
		Message map[string]json.RawMessage `json:"message"`
	}
	if err := json.Unmarshal([]byte(evs[0].data), &start); err != nil {
		t.Fatal(err)
	}
	for k, w := range map[string]string{"type": `"message"`, "role": `"assistant"`, "model": `"fake"`, "content": `[]`,
		"stop_reason": "null", "stop_sequence": "null",
		"usage": fmt.Sprintf(`{"input_tokens":%d,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}`, prompt)} {
		if got := string(start.Message[k]); got != w {
			t.Errorf("message_start message.%s = %s, want %s", k, got, w)
		}
	}
}

// An error after the stream began is an `event: error` frame, and nothing follows it.
func TestStreamErrorAfterStart(t *testing.T) {
	f := setup(t, config{engine: func(e *enginetest.Engine) {
		e.Fail, e.FailAfter = fmt.Errorf("%w: the worker died", llm.ErrEngineFailure), 3
	}})
	resp, b := f.do(t, http.MethodPost, "/v1/messages", body(`"stream":true`))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	evs := parseSSE(t, b)
	var names []string
	for _, e := range evs {
		names = append(names, e.name)
	}
	want := "message_start,content_block_start,ping,content_block_delta,content_block_delta,content_block_delta,error"
	if strings.Join(names, ",") != want {
		t.Fatalf("events %v, want %s", names, want)
	}
	last := parseError(t, []byte(evs[len(evs)-1].data))
	if last.Error.Type != "api_error" || !strings.Contains(last.Error.Message, "the worker died") {
		t.Errorf("error event %s", evs[len(evs)-1].data)
	}
	// The SDK surfaces it as an API error.
	_, msg, err := stream(t, f, params())
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.Type() != "api_error" || !strings.Contains(apiErr.Message, "the worker died") {
		t.Errorf("SDK error %v", err)
	}
	if msg.Content[0].Text != "Hel" {
		t.Errorf("text before the error %q", msg.Content[0].Text)
	}
}

// Errors found before the first event keep their status, streaming or not.
func TestStreamErrorBeforeStart(t *testing.T) {
	f := setup(t, config{ctx: 32})
	resp, b := f.do(t, http.MethodPost, "/v1/messages", `{"model":"fake","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"`+strings.Repeat("x", 100)+`"}]}`)
	checkError(t, resp, b, wantError{400, "invalid_request_error", "prompt is too long: "})
	resp, b = f.do(t, http.MethodPost, "/v1/messages", `{"model":"nope","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"x"}]}`)
	checkError(t, resp, b, wantError{404, "not_found_error", `"nope"`})
}

func TestStreamKeepAlive(t *testing.T) {
	const reply = "slow"
	f := setup(t, config{reply: reply, keepAlive: 20 * time.Millisecond, engine: func(e *enginetest.Engine) {
		e.TokenDelay = 60 * time.Millisecond
	}})
	resp, b := f.do(t, http.MethodPost, "/v1/messages", body(`"stream":true`))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var comments int
	var text strings.Builder
	for _, e := range parseSSE(t, b) {
		switch {
		case e.comment:
			comments++
			if e.data != ": keep-alive" {
				t.Errorf("comment %q", e.data)
			}
		case e.name == "content_block_delta":
			var d struct {
				Delta struct{ Text string } `json:"delta"`
			}
			_ = json.Unmarshal([]byte(e.data), &d)
			text.WriteString(d.Delta.Text)
		}
	}
	if comments == 0 {
		t.Error("no keep-alive while tokens came slower than the keep-alive interval")
	}
	if text.String() != reply {
		t.Errorf("text %q", text.String())
	}
}
