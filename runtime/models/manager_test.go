package models

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
)

// fakeRunner is a Runner over the fake engine that counts loads and can be told to fail,
// block or crash.
type fakeRunner struct {
	*enginetest.Engine
	vocabOnly bool

	starts, unloads atomic.Int32
	loaded          atomic.Bool
	startGate       chan struct{} // when set, Start waits for it to close
	startErr        error
	startCtxErr     atomic.Value // the ctx error Start saw when it finished
	genErr          error
	genGate         chan struct{}
	gens            atomic.Int32
	// active counts generations on the runner now; cutShort the unloads that came while one
	// was (a real worker's unload would have killed it), lost the generations that found the
	// runner unloaded (a real worker client would have started a worker on demand).
	active, cutShort, lost atomic.Int32
	// tokGate, when set, holds Tokenize until it closes; a runner closed meanwhile then fails
	// the call as a worker client that was shut down does.
	tokGate    chan struct{}
	tokWaiting atomic.Int32
	closed     atomic.Bool
}

func (r *fakeRunner) Tokenize(ctx context.Context, text string, addSpecial, parseSpecial bool) ([]int, error) {
	if r.tokGate != nil {
		r.tokWaiting.Add(1)
		<-r.tokGate
	}
	if r.closed.Load() {
		return nil, errors.New("the worker is shut down")
	}
	return r.Engine.Tokenize(ctx, text, addSpecial, parseSpecial)
}

func (r *fakeRunner) Close() error { r.closed.Store(true); return nil }

func (r *fakeRunner) Start(ctx context.Context) error {
	if r.loaded.Load() {
		return nil
	}
	r.starts.Add(1)
	if r.startGate != nil {
		select {
		case <-r.startGate:
		case <-ctx.Done(): // as the worker client's Start returns when its caller goes
			r.startCtxErr.Store(fmt.Sprint(ctx.Err()))
			return ctx.Err()
		}
	}
	r.startCtxErr.Store(fmt.Sprint(ctx.Err()))
	if r.startErr != nil {
		return r.startErr
	}
	r.loaded.Store(true)
	return nil
}

func (r *fakeRunner) Unload(context.Context) error {
	r.unloads.Add(1)
	if r.active.Load() > 0 {
		r.cutShort.Add(1)
	}
	r.loaded.Store(false)
	return nil
}
func (r *fakeRunner) Loaded() bool                             { return r.loaded.Load() }
func (r *fakeRunner) Slots(context.Context) (llm.Slots, error) { return llm.Slots{}, nil }
func (r *fakeRunner) Generate(ctx context.Context, req *llm.Request, emit func(llm.Event) error) error {
	if r.vocabOnly {
		return errors.New("vocab-only runner asked to generate")
	}
	if !r.loaded.Load() {
		r.lost.Add(1)
		return errors.New("generate on a runner that is not loaded")
	}
	r.gens.Add(1)
	r.active.Add(1)
	defer r.active.Add(-1)
	if r.genGate != nil {
		select {
		case <-r.genGate:
		case <-ctx.Done(): // as a worker's generation ends when its call is cancelled
			return ctx.Err()
		}
	}
	if r.genErr != nil {
		return r.genErr
	}
	return r.Engine.Generate(ctx, req, emit)
}

var errCrash = errors.New("worker exited")

type fixture struct {
	mgr     *Manager
	cat     *Catalog
	mu      sync.Mutex
	runners map[string]*fakeRunner // by path (vocab runners under path+"#vocab")
	setup   func(path string, r *fakeRunner)
}

func (f *fixture) runner(path string) *fakeRunner {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runners[path]
}

// newFixture registers n tiny models (m0, m1, ...) and a manager over fake runners.
func newFixture(t *testing.T, n int, cfg Config, setup func(path string, r *fakeRunner)) *fixture {
	t.Helper()
	cat, _, dir := openTestCatalog(t)
	for i := range n {
		path := filepath.Join(dir, fmt.Sprintf("m%d.gguf", i))
		if err := gguftest.WriteTinyLlama(path, gguftest.TinyLlamaOptions{Seed: int64(i)}); err != nil {
			t.Fatal(err)
		}
		if _, err := cat.AddLocal(context.Background(), path, ""); err != nil {
			t.Fatal(err)
		}
	}
	f := &fixture{cat: cat, runners: map[string]*fakeRunner{}, setup: setup}
	cfg.NewRunner = func(e *Entry, vocabOnly bool) Runner {
		r := &fakeRunner{Engine: enginetest.New(512, "hello"), vocabOnly: vocabOnly}
		key := e.Path
		if vocabOnly {
			key += "#vocab"
		} else if f.setup != nil {
			f.setup(e.Path, r)
		}
		f.mu.Lock()
		f.runners[key] = r
		f.mu.Unlock()
		return r
	}
	cfg.Crashed = func(err error) bool { return errors.Is(err, errCrash) }
	if cfg.MemoryBudget == 0 {
		cfg.MemoryBudget = 1 << 40
	}
	f.mgr = NewManager(cat, cfg)
	t.Cleanup(func() { f.mgr.Close() })
	return f
}

func (f *fixture) handle(t *testing.T, name string) *Handle {
	t.Helper()
	e, err := f.cat.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return f.mgr.Engine(e)
}

func generate(h *Handle) error {
	return h.Generate(context.Background(), &llm.Request{Prompt: "hi", MaxTokens: 5}, func(llm.Event) error { return nil })
}

// eventually polls cond (no timing is asserted: the deadline only stops a hung test).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestTwentyFirstRequestsOneLoad(t *testing.T) {
	gate := make(chan struct{})
	f := newFixture(t, 1, Config{}, func(_ string, r *fakeRunner) { r.startGate = gate })
	h := f.handle(t, "m0")
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- generate(h) }()
	}
	eventually(t, "a load starts", func() bool { return f.runner(h.Entry().Path).starts.Load() == 1 })
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	r := f.runner(h.Entry().Path)
	if r.starts.Load() != 1 || r.gens.Load() != 20 {
		t.Fatalf("starts = %d, generations = %d; want 1 load for 20 requests", r.starts.Load(), r.gens.Load())
	}
}

func TestLoadOutlivesTheCallerThatStartedIt(t *testing.T) {
	gate := make(chan struct{})
	f := newFixture(t, 1, Config{}, func(_ string, r *fakeRunner) { r.startGate = gate })
	h := f.handle(t, "m0")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- h.Generate(ctx, &llm.Request{Prompt: "hi"}, func(llm.Event) error { return nil })
	}()
	eventually(t, "a load starts", func() bool { return f.runner(h.Entry().Path).starts.Load() == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("the caller got %v, want context.Canceled", err)
	}
	close(gate)
	eventually(t, "the model loads without its caller", h.Loaded)
	r := f.runner(h.Entry().Path)
	if got := r.startCtxErr.Load(); got != "<nil>" {
		t.Fatalf("the load's context ended with the caller's: %v", got)
	}
	if err := generate(h); err != nil || r.starts.Load() != 1 {
		t.Fatalf("next request: %v, starts = %d", err, r.starts.Load())
	}
}

func TestFailedLoadBacksOff(t *testing.T) {
	boom := errors.New("load model: bad tensor")
	f := newFixture(t, 1, Config{Backoff: time.Hour}, func(_ string, r *fakeRunner) { r.startErr = boom })
	h := f.handle(t, "m0")
	for i := range 5 {
		if err := generate(h); !errors.Is(err, boom) {
			t.Fatalf("request %d: %v, want the load error", i, err)
		}
	}
	r := f.runner(h.Entry().Path)
	if r.starts.Load() != 1 {
		t.Fatalf("5 requests started %d loads; want 1 and backoff", r.starts.Load())
	}
	if st := f.mgr.Status(h.Entry()); st.State != StateFailed || !errors.Is(st.Err, boom) {
		t.Fatalf("status = %+v, want failed with the error", st)
	}
	// An explicit load tries again at once.
	r.startErr = nil
	if _, err := f.mgr.Load(context.Background(), "m0"); err != nil {
		t.Fatal(err)
	}
	if r.starts.Load() != 2 || f.mgr.Status(h.Entry()).State != StateLoaded {
		t.Fatalf("explicit load: starts = %d, state %s", r.starts.Load(), f.mgr.Status(h.Entry()).State)
	}
}

func TestBudgetEvictsLeastRecentlyUsedIdle(t *testing.T) {
	f := newFixture(t, 3, Config{MemoryBudget: 1}, nil) // budget set below after measuring
	h0, h1, h2 := f.handle(t, "m0"), f.handle(t, "m1"), f.handle(t, "m2")
	need := f.mgr.Status(h0.Entry()).Need
	f.mgr.cfg.MemoryBudget = 2*need + need/2 // two fit, not three
	for _, h := range []*Handle{h0, h1} {
		if err := generate(h); err != nil {
			t.Fatal(err)
		}
	}
	if err := generate(h0); err != nil { // m0 is now more recently used than m1
		t.Fatal(err)
	}
	if err := generate(h2); err != nil {
		t.Fatal(err)
	}
	if h1.Loaded() || !h0.Loaded() || !h2.Loaded() {
		t.Fatalf("loaded: m0 %v m1 %v m2 %v; want m1 (least recently used) evicted", h0.Loaded(), h1.Loaded(), h2.Loaded())
	}
	if f.runner(h1.Entry().Path).unloads.Load() != 1 {
		t.Fatal("the evicted model's worker was not unloaded")
	}
	if _, used := f.mgr.Budget(); used > f.mgr.cfg.MemoryBudget {
		t.Fatalf("used %d over the budget %d", used, f.mgr.cfg.MemoryBudget)
	}
}

func TestBudgetFullOfBusyModelsNamesTheNeed(t *testing.T) {
	gen := make(chan struct{})
	f := newFixture(t, 2, Config{}, nil)
	h0, h1 := f.handle(t, "m0"), f.handle(t, "m1")
	need := f.mgr.Status(h0.Entry()).Need
	f.mgr.cfg.MemoryBudget = need + need/2
	if err := generate(h0); err != nil {
		t.Fatal(err)
	}
	f.runner(h0.Entry().Path).genGate = gen
	busy := make(chan error, 1)
	go func() { busy <- generate(h0) }()
	eventually(t, "m0 busy", func() bool { return f.mgr.Status(h0.Entry()).Inflight == 1 })
	err := generate(h1)
	var me *MemoryError
	if !errors.As(err, &me) || me.Need != need || !errors.Is(err, llm.ErrEngineFailure) {
		t.Fatalf("got %v; want a MemoryError naming %d bytes", err, need)
	}
	close(gen)
	if err := <-busy; err != nil {
		t.Fatal(err)
	}
	if err := generate(h1); err != nil {
		t.Fatalf("once m0 is idle, m1 loads by evicting it: %v", err)
	}
}

func TestMaxLoaded(t *testing.T) {
	f := newFixture(t, 2, Config{MaxLoaded: 1}, nil)
	h0, h1 := f.handle(t, "m0"), f.handle(t, "m1")
	for _, h := range []*Handle{h0, h1} {
		if err := generate(h); err != nil {
			t.Fatal(err)
		}
	}
	if h0.Loaded() || !h1.Loaded() {
		t.Fatalf("max-loaded 1: m0 %v m1 %v", h0.Loaded(), h1.Loaded())
	}
}

func TestKeepAlive(t *testing.T) {
	f := newFixture(t, 1, Config{KeepAlive: time.Hour}, nil)
	h := f.handle(t, "m0")
	eng, release, err := h.Acquire(context.Background())
	if err != nil || eng == nil {
		t.Fatal(err)
	}
	zero := time.Duration(0)
	release(&zero)
	eventually(t, "keep_alive 0 unloads at once", func() bool { return !h.Loaded() })

	_, release, _ = h.Acquire(context.Background())
	short := 20 * time.Millisecond
	release(&short)
	if st := f.mgr.Status(h.Entry()); st.ExpiresAt.IsZero() {
		t.Fatal("no expiry scheduled")
	}
	eventually(t, "the keep-alive expires", func() bool { return !h.Loaded() })

	_, release, _ = h.Acquire(context.Background())
	forever := time.Duration(-1)
	release(&forever)
	if st := f.mgr.Status(h.Entry()); !st.ExpiresAt.IsZero() || st.State != StateLoaded {
		t.Fatalf("keep_alive -1: %+v", st)
	}
	// Token counting while loaded does not change the keep-alive.
	if _, err := h.Tokenize(context.Background(), "abc", true, true); err != nil {
		t.Fatal(err)
	}
	if st := f.mgr.Status(h.Entry()); !st.ExpiresAt.IsZero() || st.State != StateLoaded {
		t.Fatalf("after tokenize: %+v", st)
	}
}

func TestLoadingOneModelDoesNotStallAnother(t *testing.T) {
	gate := make(chan struct{})
	f := newFixture(t, 2, Config{}, func(path string, r *fakeRunner) {
		if filepath.Base(path) == "m0.gguf" {
			r.startGate = gate
		}
	})
	h0, h1 := f.handle(t, "m0"), f.handle(t, "m1")
	go generate(h0)
	eventually(t, "m0 loading", func() bool { return f.mgr.Status(h0.Entry()).State == StateLoading })
	if err := generate(h1); err != nil {
		t.Fatal(err)
	}
	close(gate)
}

// TestPromptThatCompletesIsNotQuarantined: a prompt blamed for a worker's death (it was in
// flight when the worker died: an external SIGKILL, the OOM killer, another request's crash)
// that then runs to the end is cleared, so two such deaths hours apart do not refuse a common
// prompt for good. The soak found it: tool prompts that repeat were quarantined after two kills.
func TestPromptThatCompletesIsNotQuarantined(t *testing.T) {
	f := newFixture(t, 1, Config{}, nil)
	h := f.handle(t, "m0")
	if err := generate(h); err != nil {
		t.Fatal(err)
	}
	r := f.runner(h.Entry().Path)
	for i := range 3 {
		r.genErr = errCrash
		if err := generate(h); !errors.Is(err, errCrash) {
			t.Fatalf("death %d: %v", i+1, err)
		}
		r.genErr = nil
		if err := generate(h); err != nil {
			t.Fatalf("the run after death %d: %v, want it served", i+1, err)
		}
	}
}

func TestCrashingPromptIsQuarantined(t *testing.T) {
	f := newFixture(t, 1, Config{}, func(_ string, r *fakeRunner) { r.genErr = errCrash })
	h := f.handle(t, "m0")
	for i := range 2 {
		if err := generate(h); !errors.Is(err, errCrash) {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	err := generate(h)
	if !errors.Is(err, llm.ErrInvalidInput) {
		t.Fatalf("third run: %v, want a refusal", err)
	}
	if n := f.runner(h.Entry().Path).gens.Load(); n != 2 {
		t.Fatalf("the worker ran the quarantined prompt: %d runs", n)
	}
	// Another prompt still runs.
	other := h.Generate(context.Background(), &llm.Request{Prompt: "other"}, func(llm.Event) error { return nil })
	if !errors.Is(other, errCrash) {
		t.Fatalf("another prompt: %v", other)
	}
}

func TestTokenizeUnloadedUsesTheVocabulary(t *testing.T) {
	f := newFixture(t, 1, Config{}, nil)
	h := f.handle(t, "m0")
	tokens, err := h.Tokenize(context.Background(), "abc", true, true)
	if err != nil || len(tokens) != 4 {
		t.Fatalf("tokens = %v, %v", tokens, err)
	}
	if h.Loaded() || f.runner(h.Entry().Path).starts.Load() != 0 {
		t.Fatal("counting tokens loaded the model")
	}
	if f.runner(h.Entry().Path+"#vocab") == nil {
		t.Fatal("no vocabulary-only runner answered")
	}
}

// TestTokenizeDuringALoad: a count that started on the tokenizer-only worker while the model
// loaded, which retires that worker once the model is up, is answered by the loaded model, not
// with the retired worker's "shut down".
func TestTokenizeDuringALoad(t *testing.T) {
	f := newFixture(t, 1, Config{}, nil)
	h := f.handle(t, "m0")
	if _, err := h.Tokenize(context.Background(), "abc", true, true); err != nil {
		t.Fatal(err)
	}
	vocab := f.runner(h.Entry().Path + "#vocab")
	gate := make(chan struct{})
	vocab.tokGate = gate
	type result struct {
		ids []int
		err error
	}
	done := make(chan result, 1)
	go func() {
		ids, err := h.Tokenize(context.Background(), "abc", true, true)
		done <- result{ids, err}
	}()
	for vocab.tokWaiting.Load() == 0 { // the count is on the tokenizer-only worker
		time.Sleep(time.Millisecond)
	}
	if _, err := f.mgr.Load(context.Background(), "m0"); err != nil {
		t.Fatal(err)
	}
	for !vocab.closed.Load() { // the load retires the tokenizer-only worker
		time.Sleep(time.Millisecond)
	}
	close(gate)
	if r := <-done; r.err != nil || len(r.ids) != 4 {
		t.Fatalf("a count during the load: %v, %v", r.ids, r.err)
	}
}

func TestRemoveWhileServing(t *testing.T) {
	gen := make(chan struct{})
	f := newFixture(t, 1, Config{}, func(_ string, r *fakeRunner) { r.genGate = gen })
	h := f.handle(t, "m0")
	busy := make(chan error, 1)
	go func() { busy <- generate(h) }()
	eventually(t, "generating", func() bool { return f.mgr.Status(h.Entry()).Inflight == 1 })
	removed := make(chan error, 1)
	go func() {
		_, _, err := f.mgr.Remove(context.Background(), "m0")
		removed <- err
	}()
	eventually(t, "the catalog drops it", func() bool { _, err := f.cat.Lookup("m0"); return err != nil })
	close(gen)
	if err := <-busy; err != nil {
		t.Fatalf("the request being served when its model was deleted: %v", err)
	}
	if err := <-removed; err != nil {
		t.Fatal(err)
	}
	if err := generate(h); !errors.Is(err, llm.ErrModelNotFound) {
		t.Fatalf("using a deleted model: %v", err)
	}
}

func TestMissingFileIsReported(t *testing.T) {
	f := newFixture(t, 1, Config{}, nil)
	e, _ := f.cat.Lookup("m0")
	if err := os.Remove(e.Path); err != nil {
		t.Fatal(err)
	}
	e = f.cat.Refresh(e)
	if !e.Missing() {
		t.Fatalf("entry error %v; want missing", e.Err)
	}
	err := generate(f.mgr.Engine(e))
	if !errors.Is(err, llm.ErrEngineFailure) {
		t.Fatalf("generate on a missing file: %v", err)
	}
}

func TestPerModelSettings(t *testing.T) {
	f := newFixture(t, 2, Config{KeepAlive: time.Hour, Parallel: 4}, nil)
	h0, h1 := f.handle(t, "m0"), f.handle(t, "m1")
	base := f.mgr.Status(h0.Entry()).Need
	forever := time.Duration(-1)
	f.mgr.SetSettings("m0", Settings{ContextLength: 1024, Lanes: 1, KeepAlive: &forever})
	h0 = f.handle(t, "m0")
	if info := h0.Info(); info.ContextLength != 1024 || info.Parallel != 1 {
		t.Fatalf("info with settings %+v", info)
	}
	if need := f.mgr.Status(h0.Entry()).Need; need >= base {
		t.Fatalf("1 lane × 1024 needs %d, 4 lanes × 2048 needed %d", need, base)
	}
	for _, h := range []*Handle{h0, h1} {
		if err := generate(h); err != nil {
			t.Fatal(err)
		}
	}
	if st := f.mgr.Status(h0.Entry()); !st.ExpiresAt.IsZero() {
		t.Fatalf("m0's own keep-alive is forever; it expires at %v", st.ExpiresAt)
	}
	if st := f.mgr.Status(h1.Entry()); st.ExpiresAt.IsZero() {
		t.Fatal("m1 has the server's keep-alive; no expiry scheduled")
	}
	first := f.runner(h0.Entry().Path)
	if err := f.mgr.Reconfigure(context.Background(), h0.Entry()); err != nil {
		t.Fatal(err)
	}
	if h0.Loaded() || first.unloads.Load() != 1 {
		t.Fatal("a reconfigured model stays loaded")
	}
	if err := generate(h0); err != nil || f.runner(h0.Entry().Path) == first {
		t.Fatalf("the next load uses a new runner (its settings): %v", err)
	}
}

// TestDraftModelCountsInTheNeed: a model whose settings load a draft model beside it needs the
// draft's weights too, or the budget over-commits memory.
func TestDraftModelCountsInTheNeed(t *testing.T) {
	f := newFixture(t, 1, Config{}, nil)
	h := f.handle(t, "m0")
	plain := f.mgr.Status(h.Entry()).Need
	draft := filepath.Join(t.TempDir(), "draft.gguf")
	if err := os.WriteFile(draft, make([]byte, 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	f.mgr.SetSettings(h.Entry().ID, Settings{DraftModelPath: draft})
	if got := f.mgr.Status(f.handle(t, "m0").Entry()).Need; got != plain+3<<20 {
		t.Fatalf("need with a 3 MiB draft model = %d, want %d + %d", got, plain, 3<<20)
	}
}
