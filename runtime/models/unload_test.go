package models

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
)

// TestExplicitLoadOfABrokenModelTriesOnce: an explicit load ignores the backoff, but it tries
// once and reports the failure; it does not start the model again and again.
func TestExplicitLoadOfABrokenModelTriesOnce(t *testing.T) {
	boom := errors.New("load model: bad tensor")
	f := newFixture(t, 1, Config{}, func(_ string, r *fakeRunner) { r.startErr = boom })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := f.mgr.Load(ctx, "m0")
	r := f.runner(f.handle(t, "m0").Entry().Path)
	if !errors.Is(err, boom) || r.starts.Load() != 1 {
		t.Fatalf("explicit load of a broken model: %v after %d starts; want its error after 1", err, r.starts.Load())
	}
	if _, err := f.mgr.Load(ctx, "m0"); !errors.Is(err, boom) || r.starts.Load() != 2 {
		t.Fatalf("a second explicit load: %v after %d starts; want one more try", err, r.starts.Load())
	}
}

// TestClosedManagerRefusesLoads: Close calls off an explicit load in progress, which returns
// ErrClosed instead of starting the model again; after Close every load, generation and token
// count is refused with ErrClosed and starts nothing.
func TestClosedManagerRefusesLoads(t *testing.T) {
	gate := make(chan struct{}) // never opened: the load ends only when Close calls it off
	f := newFixture(t, 1, Config{}, func(_ string, r *fakeRunner) { r.startGate = gate })
	h := f.handle(t, "m0")
	loaded := make(chan error, 1)
	go func() {
		_, err := f.mgr.Load(context.Background(), "m0")
		loaded <- err
	}()
	r := f.runner(h.Entry().Path)
	eventually(t, "the load starts", func() bool { return r.starts.Load() == 1 })
	closed := make(chan error, 1)
	go func() { closed <- f.mgr.Close() }()
	select {
	case err := <-loaded:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("the load called off by Close: %v, want ErrClosed", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the explicit load never returned after Close (%d starts)", r.starts.Load())
	}
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close never returned")
	}
	if _, err := f.mgr.Load(context.Background(), "m0"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Load after Close: %v", err)
	}
	if err := generate(h); !errors.Is(err, ErrClosed) {
		t.Fatalf("Generate after Close: %v", err)
	}
	if _, err := h.Tokenize(context.Background(), "abc", true, true); !errors.Is(err, ErrClosed) {
		t.Fatalf("Tokenize after Close: %v", err)
	}
	if n := r.starts.Load(); n != 1 {
		t.Fatalf("%d starts; want the one Close called off", n)
	}
	if f.runner(h.Entry().Path+"#vocab") != nil {
		t.Fatal("a tokenizer worker was made after Close")
	}
}

// TestUnloadWaitsForAcquiredRequests: a request that acquired the model but has not reached
// the worker yet (it waits at the core's gate for a lane) holds the unload; it runs on the
// worker the manager loaded, and only then is that worker stopped.
func TestUnloadWaitsForAcquiredRequests(t *testing.T) {
	f := newFixture(t, 1, Config{}, nil)
	h := f.handle(t, "m0")
	eng, release, err := h.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r := f.runner(h.Entry().Path)
	// An unload whose caller gives up at once: it goes on, and waits for the request.
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.mgr.Unload(gone, "m0"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Unload with its caller gone: %v, want context.Canceled (and the unload going on)", err)
	}
	s := h.s
	eventually(t, "the unload waits for the request, or is done", func() bool {
		f.mgr.mu.Lock()
		defer f.mgr.mu.Unlock()
		return s.wake != nil || s.state == StateUnloaded
	})
	if st := f.mgr.Status(h.Entry()); st.State != StateUnloading || r.unloads.Load() != 0 {
		t.Fatalf("with a request holding the model the unload went ahead: state %s, %d unloads", st.State, r.unloads.Load())
	}
	if err := eng.Generate(context.Background(), &llm.Request{Prompt: "hi", MaxTokens: 3}, func(llm.Event) error { return nil }); err != nil {
		t.Fatalf("the request that acquired the model before the unload: %v", err)
	}
	release(nil)
	eventually(t, "the model unloads after the request", func() bool { return f.mgr.Status(h.Entry()).State == StateUnloaded })
	if r.starts.Load() != 1 || r.unloads.Load() != 1 || r.lost.Load() != 0 || r.cutShort.Load() != 0 {
		t.Fatalf("starts %d, unloads %d, generations on an unloaded runner %d, cut short %d; want 1, 1, 0, 0",
			r.starts.Load(), r.unloads.Load(), r.lost.Load(), r.cutShort.Load())
	}
}

// TestDrainEndRefusesAcquiredRequests: a request still holding the model when the drain ends
// is refused with ErrUnloaded when it reaches for the worker; it starts none.
func TestDrainEndRefusesAcquiredRequests(t *testing.T) {
	f := newFixture(t, 1, Config{DrainTimeout: time.Millisecond}, nil)
	h := f.handle(t, "m0")
	eng, release, err := h.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release(nil)
	if _, err := f.mgr.Unload(context.Background(), "m0"); err != nil {
		t.Fatal(err)
	}
	err = eng.Generate(context.Background(), &llm.Request{Prompt: "hi", MaxTokens: 3}, func(llm.Event) error { return nil })
	if !errors.Is(err, ErrUnloaded) || !errors.Is(err, llm.ErrEngineFailure) {
		t.Fatalf("a request cut by the drain: %v, want ErrUnloaded (an engine failure)", err)
	}
	r := f.runner(h.Entry().Path)
	if r.starts.Load() != 1 || r.lost.Load() != 0 || h.Loaded() {
		t.Fatalf("starts %d, generations on an unloaded runner %d, loaded %v", r.starts.Load(), r.lost.Load(), h.Loaded())
	}
	// The model loads again for the next request, as the manager knows.
	if err := generate(h); err != nil || r.starts.Load() != 2 {
		t.Fatalf("the next request: %v, starts %d", err, r.starts.Load())
	}
}

// TestUnloadOutlivesItsCaller: an admin's unload whose connection drops does not stop the
// generation in flight; the unload still happens, after it.
func TestUnloadOutlivesItsCaller(t *testing.T) {
	gen := make(chan struct{})
	f := newFixture(t, 1, Config{}, func(_ string, r *fakeRunner) { r.genGate = gen })
	h := f.handle(t, "m0")
	busy := make(chan error, 1)
	go func() { busy <- generate(h) }()
	r := f.runner(h.Entry().Path)
	eventually(t, "generating", func() bool { return r != nil && r.active.Load() == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	unloaded := make(chan error, 1)
	go func() {
		_, err := f.mgr.Unload(ctx, "m0")
		unloaded <- err
	}()
	eventually(t, "unloading", func() bool { return f.mgr.Status(h.Entry()).State == StateUnloading })
	cancel() // the admin hangs up
	if err := <-unloaded; !errors.Is(err, context.Canceled) {
		t.Fatalf("the unload's caller: %v, want context.Canceled", err)
	}
	close(gen)
	if err := <-busy; err != nil {
		t.Fatalf("the generation running during the unload: %v", err)
	}
	eventually(t, "the unload happens after it", func() bool { return f.mgr.Status(h.Entry()).State == StateUnloaded })
	if r.unloads.Load() != 1 || r.cutShort.Load() != 0 {
		t.Fatalf("unloads %d, of them during a generation %d; want 1, 0", r.unloads.Load(), r.cutShort.Load())
	}
}
