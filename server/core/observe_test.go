package core

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
)

// countingObserver counts what the core reports.
type countingObserver struct {
	mu                 sync.Mutex
	generations        []string
	first, interPieces int
	interTokens        int
	tokens             map[string]llm.Usage
	batchOK, batchFail int
}

func (o *countingObserver) Generation(model string) GenerationObserver {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.generations = append(o.generations, model)
	return o
}

func (o *countingObserver) Tokens(model string, u llm.Usage) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.tokens == nil {
		o.tokens = map[string]llm.Usage{}
	}
	t := o.tokens[model]
	t.PromptTokens += u.PromptTokens
	t.CachedTokens += u.CachedTokens
	t.CompletionTokens += u.CompletionTokens
	o.tokens[model] = t
}

func (o *countingObserver) BatchLine(ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ok {
		o.batchOK++
	} else {
		o.batchFail++
	}
}

func (o *countingObserver) FirstToken(time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.first++
}

func (o *countingObserver) InterToken(_ time.Duration, tokens int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.interPieces++
	o.interTokens += tokens
}

// TestObserverSeesGenerations: each request reports its tokens once and its first token once
// (whatever n), and every piece after a choice's first is an inter-token gap.
func TestObserverSeesGenerations(t *testing.T) {
	const reply = "abcdef" // the fake: one token, one piece per byte
	cases := []struct {
		name                        string
		req                         CompletionRequest
		completion, first, interTok int
	}{
		{"one choice", CompletionRequest{Model: "fake", Generation: llm.Request{Prompt: "hi"}}, 6, 1, 5},
		{"capped", CompletionRequest{Model: "fake", Generation: llm.Request{Prompt: "hi", MaxTokens: 2}}, 2, 1, 1},
		{"three choices", CompletionRequest{Model: "fake", N: 3, Generation: llm.Request{Prompt: "hi"}}, 18, 1, 15},
		{"one token", CompletionRequest{Model: "fake", Generation: llm.Request{Prompt: "hi", MaxTokens: 1}}, 1, 1, 0},
		{"unknown model", CompletionRequest{Model: "nope", Generation: llm.Request{Prompt: "hi"}}, 0, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obs := &countingObserver{}
			svc := New(Config{Observer: obs}, nil, fakeModel(t, enginetest.New(256, reply)))
			_, _ = svc.Complete(context.Background(), &c.req, func(int, llm.Event) error { return nil })
			u := obs.tokens["fake"]
			if c.req.Model == "fake" && (u.PromptTokens != 3 || len(obs.generations) != 1 || obs.generations[0] != "fake") {
				t.Errorf("prompt tokens %d, generations %v: want 3 (BOS + 2 bytes) and [fake]", u.PromptTokens, obs.generations)
			}
			if u.CompletionTokens != c.completion || obs.first != c.first || obs.interTokens != c.interTok || obs.interPieces != c.interTok {
				t.Errorf("completion %d, first %d, inter-token pieces %d tokens %d; want %d, %d, %d",
					u.CompletionTokens, obs.first, obs.interPieces, obs.interTokens, c.completion, c.first, c.interTok)
			}
		})
	}
}

// TestObserverDefault: a service without an observer hands out the no-op one.
func TestObserverDefault(t *testing.T) {
	svc := New(Config{}, nil)
	if _, ok := svc.Observer().(NopObserver); !ok {
		t.Fatalf("Observer() = %T, want NopObserver", svc.Observer())
	}
	svc.Observer().BatchLine(true) // must not panic
	obs := &countingObserver{}
	New(Config{Observer: obs}, nil).Observer().BatchLine(false)
	if obs.batchFail != 1 {
		t.Errorf("BatchLine(false) counted %d failures, want 1", obs.batchFail)
	}
}

// nopGen observes nothing, so the benchmark measures the core's own per-piece cost.
type nopGen struct{}

func (nopGen) FirstToken(time.Duration)      {}
func (nopGen) InterToken(time.Duration, int) {}

// BenchmarkObservePiece is the core's cost per piece of text with an observer: a clock read
// and a branch (the observer's own cost is measured in server/metrics).
func BenchmarkObservePiece(b *testing.B) {
	l := &latency{obs: nopGen{}, start: time.Now()}
	var last time.Time
	b.ReportAllocs()
	for b.Loop() {
		l.piece(&last, 1)
	}
}

// BenchmarkObservePieceOff is the same without an observer (nil latency).
func BenchmarkObservePieceOff(b *testing.B) {
	var l *latency
	var last time.Time
	b.ReportAllocs()
	for b.Loop() {
		l.piece(&last, 1)
	}
}
