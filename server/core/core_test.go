package core

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/store"
)

func fakeModel(t *testing.T, e llm.Engine) *Model {
	t.Helper()
	tmpl, err := chat.Parse("")
	if err != nil {
		t.Fatal(err)
	}
	return &Model{ID: "fake", Path: "/models/fake.gguf", Engine: e, Template: tmpl, ContextLength: 256}
}

func userChat(text string) *ChatRequest {
	return &ChatRequest{ID: "chatcmpl-test", Model: "fake", Messages: []chat.Message{{Role: "user", Content: text}}}
}

// TestQueueBound: lanes (1 on the fake) plus the queue bound may run; the next is refused
// with OverloadedError, and the admitted ones finish untouched.
func TestQueueBound(t *testing.T) {
	fake := enginetest.New(256, "slow reply")
	fake.TokenDelay = 20 * time.Millisecond
	svc := New(Config{Queue: 1}, nil, fakeModel(t, fake))
	m, _ := svc.Model("fake")

	var wg sync.WaitGroup
	results := make([]error, 2)
	started := make(chan struct{}, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, results[i] = svc.Chat(context.Background(), userChat("hi"), func(int, llm.Event) error {
				select {
				case started <- struct{}{}:
				default:
				}
				return nil
			})
		}()
	}
	// Wait until both are admitted (the fake emits Started at once).
	deadline := time.Now().Add(10 * time.Second)
	for m.sched().inflight.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the two requests were never admitted")
		}
		time.Sleep(time.Millisecond)
	}
	_, err := svc.Chat(context.Background(), userChat("hi"), func(int, llm.Event) error { return nil })
	var oe *llm.OverloadedError
	if !errors.As(err, &oe) || !errors.Is(err, llm.ErrOverloaded) || oe.Limit != 2 || llm.RetryAfterSeconds(err) < 1 {
		t.Fatalf("third request: %v; want OverloadedError with limit 2", err)
	}
	wg.Wait()
	for i, err := range results {
		if err != nil {
			t.Fatalf("admitted request %d failed: %v", i, err)
		}
	}
	if n := m.sched().inflight.Load(); n != 0 {
		t.Fatalf("inflight %d after all finished", n)
	}
	// n choices count against the bound too; n beyond it could never run (a 400, see
	// TestChoicesBeyondLanesAndQueue).
	req := userChat("hi")
	req.N = 3
	var ce *ChoicesError
	if _, err := svc.Chat(context.Background(), req, func(int, llm.Event) error { return nil }); !errors.As(err, &ce) {
		t.Fatalf("n=3 with room for 2: %v", err)
	}
}

// TestChoicesSeeded: n choices run side by side with distinct seeds derived from the request's.
func TestChoicesSeeded(t *testing.T) {
	fake := enginetest.New(256, "abc")
	svc := New(Config{}, nil, fakeModel(t, fake))
	req := userChat("hi")
	req.N = 3
	req.Generation.Sampling.Seed = 10
	res, err := svc.Chat(context.Background(), req, func(int, llm.Event) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Choices) != 3 || res.Usage().CompletionTokens != 9 || res.Usage().PromptTokens != 3 {
		t.Fatalf("choices %d usage %+v", len(res.Choices), res.Usage())
	}
	seeds := map[uint64]bool{}
	for _, r := range fake.Requests() {
		seeds[r.Sampling.Seed] = true
	}
	if len(seeds) != 3 || !seeds[10] || !seeds[11] || !seeds[12] {
		t.Fatalf("seeds %v, want 10, 11, 12", seeds)
	}
}

// TestUnknownModel names what to do next.
func TestUnknownModel(t *testing.T) {
	svc := New(Config{}, nil, fakeModel(t, enginetest.New(256, "x")))
	_, err := svc.Chat(context.Background(), &ChatRequest{Model: "nope"}, nil)
	if !errors.Is(err, llm.ErrModelNotFound) {
		t.Fatalf("err %v", err)
	}
	if _, err := svc.Model("fake"); err != nil {
		t.Errorf("Model(fake): %v", err)
	}
	// Names that could reach outside the catalog are bad input, not unknown models.
	for _, name := range []string{"/models/fake.gguf", "../fake", "a/../../etc/passwd", "fa\x00ke", strings.Repeat("x", 10<<10), "fa\nke"} {
		if _, err := svc.Model(name); !errors.Is(err, llm.ErrInvalidInput) {
			t.Errorf("Model(%.40q): %v, want invalid input", name, err)
		}
	}
}

// TestFailedRequestRecordsPartialUsage: a request that fails mid-generation is recorded with
// the tokens it used, not zeros.
func TestFailedRequestRecordsPartialUsage(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "db.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fake := enginetest.New(256, "abcdefgh")
	fake.Fail, fake.FailAfter = fmt.Errorf("%w: boom", llm.ErrEngineFailure), 3
	svc := New(Config{}, st, fakeModel(t, fake))
	res, err := svc.Chat(context.Background(), userChat("hi"), func(int, llm.Event) error { return nil })
	if res != nil || !errors.Is(err, llm.ErrEngineFailure) {
		t.Fatalf("res %v err %v", res, err)
	}
	if err := st.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec, err := st.Request(context.Background(), "chatcmpl-test")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != 500 || rec.PromptTokens != 3 || rec.CompletionTokens != 3 || rec.Error == "" {
		t.Fatalf("record %+v", rec)
	}
}
