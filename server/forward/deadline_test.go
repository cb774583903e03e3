package forward

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

// TestForwardDeadlines: the upstream has HeaderTimeout to start its reply (headers, then its
// first event: a long prefill is not cut by the idle bound) and IdleTimeout between events
// after; an upstream that never answers, or stalls mid-stream, ends in a bounded time as a 502
// upstream_error, for the chat engine and for Proxy (other routes) alike.
func TestForwardDeadlines(t *testing.T) {
	// No bound here is a race against the machine's load: where a bound must not cut (a slow
	// start, a stall after the start that only the idle bound may end) the other is an hour,
	// and a bound that failed to end a request would hang the test, not pass it.
	const idle, header, noBound = 150 * time.Millisecond, 300 * time.Millisecond, time.Hour
	slowStart := func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(3 * idle) // a prefill: longer than the idle bound, shorter than the header's
		sseHeader(w)
		w.(http.Flusher).Flush()
		time.Sleep(3 * idle) // headers sent at once, the first event after the prefill
		sse(w, `{"choices":[{"index":0,"delta":{"content":"a"}}]}`, `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, `[DONE]`)
	}
	never := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	stallMid := func(w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		sse(w, `{"choices":[{"index":0,"delta":{"content":"a"}}]}`)
		<-r.Context().Done()
	}
	engine := func(t *testing.T, h http.HandlerFunc, header time.Duration) *Engine {
		e, err := New(context.Background(), Config{URL: upstream(t, h).URL, Model: "served", IdleTimeout: idle, HeaderTimeout: header, Instance: "sf-self"})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	want502 := func(t *testing.T, err error, message string) {
		t.Helper()
		var se *llm.StatusError
		if !errors.As(err, &se) || se.Status != http.StatusBadGateway || se.Code != "upstream_error" || !strings.Contains(se.Message, message) {
			t.Fatalf("%v, want 502 upstream_error saying %q", err, message)
		}
	}

	t.Run("slow start is not cut", func(t *testing.T) {
		evs, err := collect(t, engine(t, slowStart, noBound), context.Background(), &core.ChatRequest{})
		if err != nil || len(evs) == 0 {
			t.Fatalf("%d events, %v", len(evs), err)
		}
	})
	t.Run("never answers", func(t *testing.T) {
		_, err := collect(t, engine(t, never, header), context.Background(), &core.ChatRequest{})
		want502(t, err, "did not start its reply within")
	})
	t.Run("stalls mid-stream", func(t *testing.T) {
		evs, err := collect(t, engine(t, stallMid, noBound), context.Background(), &core.ChatRequest{})
		want502(t, err, "sent nothing for")
		if len(evs) != 1 {
			t.Errorf("%d events before the stall, want 1", len(evs))
		}
	})
	proxy := func(e *Engine) (*httptest.ResponseRecorder, error) {
		r := httptest.NewRequest(http.MethodPost, "/v1/score", strings.NewReader(`{"model":"x"}`))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		return w, Proxy(w, r, e)
	}
	t.Run("proxy: slow start is not cut", func(t *testing.T) {
		w, err := proxy(engine(t, slowStart, noBound))
		if err != nil || !strings.Contains(w.Body.String(), "[DONE]") {
			t.Fatalf("%v %q", err, w.Body.String())
		}
	})
	t.Run("proxy: never answers", func(t *testing.T) {
		_, err := proxy(engine(t, never, header))
		want502(t, err, "did not start its reply within")
	})
	t.Run("proxy: stalls mid-stream", func(t *testing.T) {
		w, err := proxy(engine(t, stallMid, noBound))
		// The reply had begun, so the relay is cut short (nothing more can be said), by the
		// idle bound alone.
		if err != nil || !strings.Contains(w.Body.String(), `"content":"a"`) {
			t.Fatalf("%v: %q", err, w.Body.String())
		}
	})
	t.Run("defaults", func(t *testing.T) {
		e, _ := New(context.Background(), Config{URL: "http://127.0.0.1:9", Model: "m"})
		if e.cfg.HeaderTimeout != DefaultHeaderTimeout || e.cfg.IdleTimeout != DefaultIdleTimeout || DefaultHeaderTimeout < 5*time.Minute {
			t.Fatalf("header %s idle %s", e.cfg.HeaderTimeout, e.cfg.IdleTimeout)
		}
	})
}
