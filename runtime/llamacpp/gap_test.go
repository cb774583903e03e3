package llamacpp

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ollama/ollama/llama"

	"github.com/superfluid/superfluid/runtime/llm"
)

// gapClock replaces the engine's clock for the gap between events. Its time never advances,
// so every wait Generate considers is a full eventGap; after records the wait, with what the
// caller had received by then, and fires at once.
type gapClock struct {
	mu       sync.Mutex
	texts    int  // text events Generate has emitted so far
	finished bool // whether the test saw the engine finish the reply
	waits    []gapWait
	onWait   func()
}

type gapWait struct {
	texts    int
	finished bool
}

func installGapClock(e *Engine) *gapClock {
	c := &gapClock{}
	frozen := time.Now()
	e.now = func() time.Time { return frozen }
	e.after = func(time.Duration) <-chan time.Time {
		c.mu.Lock()
		c.waits = append(c.waits, gapWait{c.texts, c.finished})
		onWait := c.onWait
		c.mu.Unlock()
		if onWait != nil {
			onWait()
		}
		fired := make(chan time.Time, 1)
		fired <- frozen
		return fired
	}
	return c
}

func (c *gapClock) text() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.texts++
	return c.texts
}

func (c *gapClock) finish() {
	c.mu.Lock()
	c.finished = true
	c.mu.Unlock()
}

func (c *gapClock) recorded() []gapWait {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]gapWait(nil), c.waits...)
}

// waitIdle returns once every lane of e is idle and nothing is queued: every reply it ran has
// been finished, its last events in their mailboxes. Each Slots call is answered by the loop
// between ticks.
func waitIdle(t *testing.T, e *Engine) {
	t.Helper()
	for {
		s, err := e.Slots(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		idle := s.Queued == 0
		for _, l := range s.Lanes {
			idle = idle && l.State == "idle"
		}
		if idle {
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// TestNoGapAroundText: the first text goes out right after Started, however soon it is sampled,
// and once the reply is finished its end goes out without waiting out the gap. The prefill is
// held until Started has been emitted (so Started is taken alone), and the first text is held
// by its receiver until the engine has finished the reply (so the end is ready before Generate
// looks again): Generate must not wait at either point.
func TestNoGapAroundText(t *testing.T) {
	e := loadOwn(t, 1)
	clock := installGapClock(e)
	started := make(chan struct{})
	decode, prefilled := e.decode, false
	e.decode = func(b *llama.Batch) error { // the loop goroutine's
		if !prefilled {
			prefilled = true
			<-started
		}
		return decode(b)
	}
	req := greedy("Once upon a time", 6)
	req.IgnoreEOS = true
	var events []llm.Event
	err := e.Generate(context.Background(), req, func(ev llm.Event) error {
		events = append(events, ev)
		switch {
		case ev.Started != nil:
			close(started)
		case ev.Done == nil:
			if clock.text() == 1 {
				waitIdle(t, e)
				clock.finish()
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := checkEvents(events, 1); err != nil {
		t.Fatal(err)
	}
	if got := events[len(events)-1].Done.Usage.CompletionTokens; got != 6 {
		t.Fatalf("%d completion tokens, want 6", got)
	}
	for _, w := range clock.recorded() {
		switch {
		case w.texts == 0:
			t.Errorf("Generate waited out the event gap before the first text (after Started)")
		case w.finished:
			t.Errorf("Generate waited out the event gap after the reply had finished (%d texts out)", w.texts)
		default:
			t.Errorf("unexpected wait %+v", w)
		}
	}
}

// TestGapGroupsText: between two texts of a running reply Generate still waits out the gap,
// which groups the pieces of a fast model. Once the first text is in the mailbox the engine is
// held until Generate asks for a wait, so the reply is still running when it does.
func TestGapGroupsText(t *testing.T) {
	e := loadOwn(t, 1)
	clock := installGapClock(e)
	waited := make(chan struct{})
	var once sync.Once
	clock.onWait = func() { once.Do(func() { close(waited) }) }
	decode := e.decode
	e.decode = func(b *llama.Batch) error { // the loop goroutine's
		if j := e.lanes[0].job; j != nil && j.generated > j.pending { // some text is out
			<-waited
		}
		return decode(b)
	}
	req := greedy("Once upon a time", 32)
	req.IgnoreEOS = true
	var events []llm.Event
	err := e.Generate(context.Background(), req, func(ev llm.Event) error {
		events = append(events, ev)
		if ev.Started == nil && ev.Done == nil {
			clock.text()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := checkEvents(events, 1); err != nil {
		t.Fatal(err)
	}
	waits := clock.recorded()
	if len(waits) == 0 {
		t.Fatal("Generate never waited between texts: a fast model's pieces are not grouped")
	}
	for _, w := range waits {
		if w.texts == 0 {
			t.Errorf("a wait before the first text: %+v", waits)
		}
	}
}
