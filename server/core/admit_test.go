package core

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/store"
)

// TestChoicesBeyondLanesAndQueue: n larger than the lanes and the queue together could never
// be admitted, so it is invalid input naming the limit (400), not overload (429); n at the
// limit runs.
func TestChoicesBeyondLanesAndQueue(t *testing.T) {
	svc := New(Config{Queue: 3}, nil, fakeModel(t, enginetest.New(256, "ok")))
	req := userChat("hi")
	req.N = 5
	_, err := svc.Chat(context.Background(), req, func(int, llm.Event) error { return nil })
	var ce *ChoicesError
	if !errors.As(err, &ce) || !errors.Is(err, llm.ErrInvalidInput) || errors.Is(err, llm.ErrOverloaded) {
		t.Fatalf("n=5 over 1 lane + 3 queued: %v, want a ChoicesError that is invalid input", err)
	}
	for _, want := range []string{"n=5", "1 lanes + 3 queued", "at most 4"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if got := statusOf(err); got != 400 {
		t.Errorf("recorded status %d, want 400", got)
	}
	req.N = 4
	res, err := svc.Chat(context.Background(), req, func(int, llm.Event) error { return nil })
	if err != nil || len(res.Choices) != 4 {
		t.Fatalf("n=4 at the limit: %v", err)
	}
	m, _ := svc.Model("fake")
	if n := m.Inflight(); n != 0 {
		t.Fatalf("%d generations still counted in flight", n)
	}
	// Within the limit, n still counts against what is in flight: a retry can pass.
	release, err := svc.admit(m, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.admit(m, 4); !errors.Is(err, llm.ErrOverloaded) {
		t.Fatalf("n=4 with 1 in flight: %v, want overloaded", err)
	}
	release()
	if n := m.Inflight(); n != 0 {
		t.Fatalf("%d generations still counted in flight", n)
	}
}

// TestUndeliveredReplyIsDisconnect: when the dialect cannot deliver an event (a write that
// failed or timed out), the generation stops and the request is recorded as a client
// disconnect (499), even though the request's context was never cancelled.
func TestUndeliveredReplyIsDisconnect(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "db.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc := New(Config{}, st, fakeModel(t, enginetest.New(256, "a long enough reply")))
	broken := errors.New("write tcp: i/o timeout")
	texts := 0
	_, err = svc.Chat(context.Background(), userChat("hi"), func(_ int, ev llm.Event) error {
		if ev.Text != "" {
			texts++
			return broken
		}
		return nil
	})
	if !errors.Is(err, broken) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Chat = %v, want the write error, as a cancellation", err)
	}
	if texts != 1 {
		t.Errorf("%d text events after the failed write, want the generation stopped", texts-1)
	}
	deadline := time.Now().Add(30 * time.Second) // records may be written in the background
	for {
		rec, err := st.Request(context.Background(), "chatcmpl-test")
		if err == nil {
			if rec.Status != 499 || !rec.ClientDisconnected || !strings.Contains(rec.Error, "i/o timeout") {
				t.Fatalf("recorded status %d, client_disconnected %v, error %q; want 499, true, the write error",
					rec.Status, rec.ClientDisconnected, rec.Error)
			}
			return
		}
		if !errors.Is(err, store.ErrNotFound) || time.Now().After(deadline) {
			t.Fatalf("record: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
