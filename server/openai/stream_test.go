package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/store"
)

// streamBody returns the chunks of a finished stream, checking the framing on the way:
// 200, SSE headers, data frames only (plus comments), and data: [DONE] last.
func streamBody(t *testing.T, f *fixture, body string) ([]streamChunk, events) {
	t.Helper()
	resp, b := f.do(t, http.MethodPost, "/v1/chat/completions", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	for k, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache"} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	ev := parseSSE(t, b)
	if len(ev.data) == 0 || ev.data[len(ev.data)-1] != "[DONE]" {
		t.Fatalf("stream does not end with data: [DONE]: %q", tail(b))
	}
	var chunks []streamChunk
	for i, d := range ev.data[:len(ev.data)-1] {
		if d == "[DONE]" {
			t.Fatalf("[DONE] at frame %d of %d", i, len(ev.data))
		}
		chunks = append(chunks, decodeChunk(t, d))
	}
	return chunks, ev
}

func TestStreamFraming(t *testing.T) {
	f := setup(t, config{})
	chunks, ev := streamBody(t, f, chatBody(`"stream":true`))
	if len(ev.comments) != 0 {
		t.Errorf("comments without keep-alive: %q", ev.comments)
	}
	if len(chunks) != 2+len(defaultReply) {
		t.Fatalf("%d chunks, want role + %d content + terminal", len(chunks), len(defaultReply))
	}
	first, last := chunks[0], chunks[len(chunks)-1]
	if d := first.Choices[0].Delta; d.Role != "assistant" || d.Content != nil || first.Choices[0].FinishReason != nil {
		t.Errorf("first chunk %+v", first)
	}
	var content strings.Builder
	for i, c := range chunks {
		if c.ID != first.ID || c.Object != "chat.completion.chunk" || len(c.Choices) != 1 || c.Choices[0].Index != 0 || c.Error != nil {
			t.Errorf("chunk %d: %+v", i, c)
		}
		if i > 0 && i < len(chunks)-1 {
			ch := c.Choices[0]
			if ch.Delta.Content == nil || ch.Delta.Role != "" || ch.FinishReason != nil || c.Usage != nil || c.Superfluid != nil {
				t.Errorf("content chunk %d: %+v", i, c)
			} else {
				content.WriteString(*ch.Delta.Content)
			}
		}
	}
	if content.String() != defaultReply {
		t.Errorf("content %q, want %q", content.String(), defaultReply)
	}
	ch := last.Choices[0]
	if ch.FinishReason == nil || *ch.FinishReason != "stop" || ch.Delta.Content != nil {
		t.Errorf("terminal chunk %+v", last)
	}
	prompt := len(userHello) + 1
	if u := last.Usage; u == nil || u.PromptTokens != prompt || u.CompletionTokens != len(defaultReply) || u.TotalTokens != prompt+len(defaultReply) {
		t.Errorf("terminal usage %+v", last.Usage)
	}
	if last.Superfluid == nil || last.Superfluid.Warm == nil || *last.Superfluid.Warm != 0 {
		t.Errorf("terminal superfluid %+v", last.Superfluid)
	}
}

func TestStreamKeepAlive(t *testing.T) {
	const reply = "slow"
	f := setup(t, config{reply: reply, keepAlive: 20 * time.Millisecond, engine: func(e *enginetest.Engine) {
		e.TokenDelay = 60 * time.Millisecond
	}})
	chunks, ev := streamBody(t, f, chatBody(`"stream":true`))
	if len(ev.comments) == 0 {
		t.Error("no keep-alive while tokens came slower than the keep-alive interval")
	}
	for _, c := range ev.comments {
		if c != ": keep-alive" {
			t.Errorf("comment %q, want \": keep-alive\"", c)
		}
	}
	var content strings.Builder
	for _, c := range chunks {
		if d := c.Choices[0].Delta.Content; d != nil {
			content.WriteString(*d)
		}
	}
	if content.String() != reply {
		t.Errorf("content %q, want %q", content.String(), reply)
	}
}

func TestStreamContinuousUsage(t *testing.T) {
	tests := []struct {
		name, reply, extra string
		content            string
		completion         int // final completion_tokens
		continuous         bool
	}{
		{"plain", "Hello world!", "", "Hello world!", 12, true},
		{"stop string met", "Hello world!", `"stop":"wor"`, "Hello ", 9, true},
		{"stop prefix held, then released", "Hello wxyz", `"stop":["wor"]`, "Hello wxyz", 10, true},
		{"cap", "Hello world!", `"max_tokens":4`, "Hell", 4, true},
		{"cap while a stop prefix is held", "Hello world!", `"max_tokens":8,"stop":"world"`, "Hello wo", 8, true},
		{"off", "Hello world!", "", "Hello world!", 12, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t, config{reply: tt.reply})
			extra := fmt.Sprintf(`"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":%v}`, tt.continuous)
			if tt.extra != "" {
				extra += "," + tt.extra
			}
			chunks, _ := streamBody(t, f, chatBody(extra))
			prompt := len(userHello) + 1
			var content strings.Builder
			prev := 0
			for _, c := range chunks[1 : len(chunks)-1] {
				content.WriteString(*c.Choices[0].Delta.Content)
				if !tt.continuous {
					if c.Usage != nil {
						t.Errorf("usage on a content chunk without continuous_usage_stats: %+v", c.Usage)
					}
					continue
				}
				u := c.Usage
				if u == nil {
					t.Fatalf("content chunk without usage")
				}
				if u.CompletionTokens <= prev || u.PromptTokens != prompt || u.TotalTokens != prompt+u.CompletionTokens {
					t.Errorf("usage %+v after %d completion tokens", *u, prev)
				}
				// The fake spends one token per byte: the count covers exactly the text so far.
				if u.CompletionTokens != content.Len() {
					t.Errorf("completion_tokens %d after %q (%d tokens)", u.CompletionTokens, content.String(), content.Len())
				}
				prev = u.CompletionTokens
			}
			if content.String() != tt.content {
				t.Errorf("content %q, want %q", content.String(), tt.content)
			}
			if u := chunks[len(chunks)-1].Usage; u == nil || u.CompletionTokens != tt.completion || u.CompletionTokens < prev {
				t.Errorf("terminal usage %+v, want %d completion tokens", u, tt.completion)
			}
		})
	}
}

func TestStreamErrorAfterStart(t *testing.T) {
	f := setup(t, config{engine: func(e *enginetest.Engine) {
		e.Fail, e.FailAfter = fmt.Errorf("%w: boom", llm.ErrEngineFailure), 3
	}})
	chunks, _ := streamBody(t, f, chatBody(`"stream":true`))
	if len(chunks) != 5 {
		t.Fatalf("%d chunks, want role + 3 content + error: %+v", len(chunks), chunks)
	}
	var content strings.Builder
	for _, c := range chunks[1:4] {
		content.WriteString(*c.Choices[0].Delta.Content)
	}
	if content.String() != defaultReply[:3] {
		t.Errorf("content before the error %q", content.String())
	}
	e := chunks[4]
	if e.Error == nil || e.Choices != nil || e.ID != "" {
		t.Fatalf("error frame %+v", e)
	}
	got := parseError(t, []byte(`{"error":`+string(e.Error)+`}`))
	if want := (apiError{Message: got.Message, Type: "server_error"}); got != want || !strings.Contains(got.Message, "boom") {
		t.Errorf("error %+v, want server_error with boom, param and code null", got)
	}
	if err := f.st.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	recent, err := f.st.RecentRequests(t.Context(), 1)
	if err != nil || len(recent) != 1 {
		t.Fatal(recent, err)
	}
	if r := recent[0]; r.Status != 500 || !r.Stream || !strings.Contains(r.Error, "boom") || r.ClientDisconnected {
		t.Errorf("record %+v", r)
	}
}

// Errors found before the first frame keep their status, even with keep-alives enabled.
func TestStreamErrorBeforeStart(t *testing.T) {
	f := setup(t, config{ctx: 64, keepAlive: time.Hour})
	tests := []struct {
		name, body string
		want       wantError
	}{
		{"unknown model", `{"model":"nope","stream":true,"messages":[{"role":"user","content":"x"}]}`,
			wantError{404, invalidReq, "model", "model_not_found", "nope"}},
		{"context too long", `{"model":"fake","stream":true,"messages":[{"role":"user","content":"` + strings.Repeat("y", 100) + `"}]}`,
			wantError{400, invalidReq, "messages", "context_length_exceeded", "context window is 64"}},
		{"bad parameter", chatBody(`"stream":true,"temperature":9`), wantError{400, invalidReq, "temperature", "", "temperature"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := f.do(t, http.MethodPost, "/v1/chat/completions", tt.body)
			checkError(t, resp, b, tt.want)
		})
	}
}

func TestStreamClientDisconnect(t *testing.T) {
	reply := strings.Repeat("abcdefghij", 20)
	f := setup(t, config{reply: reply, keepAlive: 20 * time.Millisecond, engine: func(e *enginetest.Engine) {
		e.TokenDelay = 20 * time.Millisecond
	}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+"/v1/chat/completions", strings.NewReader(chatBody(`"stream":true`)))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	frames := readFrames(resp.Body)
	var id string
	for data := range frames {
		c := decodeChunk(t, data)
		id = c.ID
		if c.Choices[0].Delta.Content != nil {
			break // the first content chunk
		}
	}
	if id == "" {
		t.Fatal("no chunk arrived")
	}
	cancel()
	for range frames { // drain: the reader ends with the cancelled body
	}

	var rec store.RequestRecord
	waitFor(t, "the request record", func() bool {
		rec, err = f.st.Request(t.Context(), id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	})
	if !rec.ClientDisconnected || !rec.Stream || rec.CompletionTokens >= len(reply) || rec.Status == 200 {
		t.Errorf("record %+v", rec)
	}
	// The server is still fine.
	resp2, b := f.do(t, http.MethodPost, "/v1/chat/completions", chatBody(`"max_tokens":2`))
	if resp2.StatusCode != 200 {
		t.Fatalf("after a disconnect: %d %s", resp2.StatusCode, b)
	}
	var reply2 struct {
		Choices []struct{ Message struct{ Content string } }
	}
	if err := json.Unmarshal(b, &reply2); err != nil || reply2.Choices[0].Message.Content != "ab" {
		t.Errorf("reply %s", b)
	}
}
