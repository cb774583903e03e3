package bench

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestDecodeRate: the rate counts the tokens after the first event, however many the first
// event carried, over the time from the first event to the last.
func TestDecodeRate(t *testing.T) {
	t0 := time.Now()
	for _, tc := range []struct {
		name                string
		tokens, firstTokens int
		span                time.Duration
		want                float64
	}{
		{"one token first", 11, 1, time.Second, 10},
		{"grouped first event", 10, 4, time.Second, 6},
		{"everything in the first event", 8, 8, 0, 0},
		{"one token", 1, 1, 0, 0},
		{"half a second", 21, 1, 500 * time.Millisecond, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sample{first: t0, last: t0.Add(tc.span), tokens: tc.tokens, firstTokens: tc.firstTokens}
			if got := s.decodeRate(); got != tc.want {
				t.Errorf("decodeRate() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestStreamCountsFirstTokens: the API side asks for the running token count on every chunk
// and takes the first text chunk's count as the tokens that came with the prefill.
func TestStreamCountsFirstTokens(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			StreamOptions struct {
				ContinuousUsageStats bool `json:"continuous_usage_stats"`
			} `json:"stream_options"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || !req.StreamOptions.ContinuousUsageStats {
			t.Errorf("request without continuous_usage_stats (%v)", err)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		frames := []string{
			`{"choices":[{"delta":{"role":"assistant"}}]}`,
			`{"choices":[{"delta":{"content":"Once upon"}}],"usage":{"prompt_tokens":5,"completion_tokens":3}}`,
			`{"choices":[{"delta":{"content":" a time"}}],"usage":{"prompt_tokens":5,"completion_tokens":5}}`,
			`{"choices":[{"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":6,"prompt_tokens_details":{"cached_tokens":2}}}`,
		}
		for _, f := range frames {
			fmt.Fprintf(w, "data: %s\n\n", f)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	api := &apiClient{url: srv.URL, model: "m"}
	s, err := api.sample("Once", 6)
	if err != nil {
		t.Fatal(err)
	}
	if s.firstTokens != 3 || s.tokens != 6 || s.promptTokens != 5 || s.cached != 2 || s.text != "Once upon a time" {
		t.Fatalf("sample %+v; want 3 tokens first, 6 in all, 5 prompt tokens, 2 cached", s)
	}
}

// TestErrorStatusFailsAtOnce: a tokenize or stream request answered with an error fails the
// measurement at once, instead of reading the error body as a count of zero and growing the
// text until the timeout.
func TestErrorStatusFailsAtOnce(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, `{"error":{"message":"model not found"}}`, http.StatusNotFound)
	}))
	defer srv.Close()
	api := &apiClient{url: srv.URL, model: "m"}
	if _, err := api.textOfTokens(1000, 0); err == nil || !strings.Contains(err.Error(), "status 404") {
		t.Errorf("textOfTokens: %v; want the 404", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("textOfTokens asked %d times; want one request, then the error", n)
	}
	if _, err := api.sample("Once", 4); err == nil || !strings.Contains(err.Error(), "status 404") {
		t.Errorf("sample: %v; want the 404", err)
	}
	if _, err := api.latencySample("Once", 4); err == nil || !strings.Contains(err.Error(), "status 404") {
		t.Errorf("latencySample: %v; want the 404", err)
	}
}

// TestLatencySample: the client's spans come from the lines' arrival, the engine's from the
// last line's durations; an error line fails the sample.
func TestLatencySample(t *testing.T) {
	lines := []string{
		`{"message":{"role":"assistant","content":"Once"},"done":false}`,
		`{"message":{"role":"assistant","content":" upon"},"done":false}`,
		`{"message":{"role":"assistant","content":""},"done":true,"done_reason":"length","total_duration":9000000,"prompt_eval_duration":2000000,"eval_count":2,"eval_duration":3000000}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/chat" {
			http.NotFound(w, r)
			return
		}
		for _, l := range lines {
			fmt.Fprintln(w, l)
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	api := &apiClient{url: srv.URL, model: "m"}
	l, err := api.latencySample("Once", 2)
	if err != nil {
		t.Fatal(err)
	}
	if l.tokens != 2 || l.prefill != 2*time.Millisecond || l.engineDecode != 3*time.Millisecond || l.serverTotal != 9*time.Millisecond ||
		l.first <= 0 || l.decode < 0 || l.tail < 0 || l.total != l.first+l.decode+l.tail {
		t.Fatalf("latency %+v", l)
	}
	var out strings.Builder
	printLatency(&out, []latency{l, l, l})
	for _, want := range []string{"medians of 3", "first token", "first to last token", "last token to end", "whole request", "2ms"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printed latency lacks %q:\n%s", want, out.String())
		}
	}

	lines = []string{`{"message":{"content":"Once"},"done":false}`, `{"error":"the worker failed"}`}
	if _, err := api.latencySample("Once", 2); err == nil || !strings.Contains(err.Error(), "the worker failed") {
		t.Fatalf("an error line: %v", err)
	}
}
