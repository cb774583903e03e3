package worker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
)

// unloadInProgress reports whether an Unload is waiting or stopping the worker (tests).
func (c *Client) unloadInProgress() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unloading != nil
}

var loadingLine = regexp.MustCompile(`loading pid=(\d+)`)

// loadingPIDs lists the workers that began loading, from the test workers' log.
func loadingPIDs(log string) []int {
	var pids []int
	for _, m := range loadingLine.FindAllStringSubmatch(log, -1) {
		pid, _ := strconv.Atoi(m[1])
		pids = append(pids, pid)
	}
	return pids
}

// tokenizedBy is the pid of the worker that logged tokenizing text, or 0.
func tokenizedBy(log, text string) int {
	m := regexp.MustCompile(`tokenize "` + regexp.QuoteMeta(text) + `" pid=(\d+)`).FindStringSubmatch(log)
	if m == nil {
		return 0
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

type outcome struct {
	events []llm.Event
	err    error
}

// generateBlocked starts a generation whose emit blocks at its first text event until release
// is closed, so that the call is certainly in flight; it returns when that event has arrived.
func generateBlocked(t *testing.T, c *Client, req *llm.Request, release <-chan struct{}) <-chan outcome {
	t.Helper()
	first := make(chan struct{})
	out := make(chan outcome, 1)
	go func() {
		var events []llm.Event
		blocked := false
		err := c.Generate(context.Background(), req, func(ev llm.Event) error {
			events = append(events, ev)
			if ev.Text != "" && !blocked {
				blocked = true
				close(first)
				<-release
			}
			return nil
		})
		if !blocked {
			close(first)
		}
		out <- outcome{events, err}
	}()
	<-first
	return out
}

func TestUnloadLetsCallsFinish(t *testing.T) {
	c, _ := started(t, "slow")
	pid := c.PID()
	dir := filepath.Dir(c.Info().Path)
	release := make(chan struct{})
	gen := generateBlocked(t, c, &llm.Request{Prompt: "inflight", MaxTokens: 30}, release)
	if got := c.InFlight(); got != 1 {
		t.Errorf("InFlight during a generation = %d, want 1", got)
	}
	unloaded := make(chan error, 1)
	go func() { unloaded <- c.Unload(context.Background()) }()
	waitFor(t, "the unload to begin", c.unloadInProgress)
	if !c.Loaded() {
		t.Error("the worker stopped before its call finished")
	}
	close(release)
	r := <-gen
	if r.err != nil || textOf(r.events) != childSlowReply[:30] {
		t.Fatalf("generation during Unload = %q, %v; want its full reply %q", textOf(r.events), r.err, childSlowReply[:30])
	}
	if err := <-unloaded; err != nil {
		t.Fatalf("Unload = %v", err)
	}
	if c.Loaded() || c.PID() != 0 || c.InFlight() != 0 {
		t.Errorf("after Unload: Loaded %v, PID %d, InFlight %d; want false, 0, 0", c.Loaded(), c.PID(), c.InFlight())
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("worker %d after Unload: kill(0) = %v, want it gone", pid, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket directory after Unload: %v, want it removed", err)
	}
	// The client stays usable: the next call starts a new worker.
	events, err := collect(context.Background(), c, &llm.Request{Prompt: "after", MaxTokens: 4})
	if err != nil || textOf(events) != "slow" {
		t.Fatalf("Generate after Unload = %q, %v", textOf(events), err)
	}
	if got := c.PID(); got == 0 || got == pid {
		t.Errorf("PID after Unload and Generate = %d, want a new worker (old %d)", got, pid)
	}
	if err := c.Unload(context.Background()); err != nil || c.Loaded() {
		t.Errorf("second Unload = %v (loaded %v)", err, c.Loaded())
	}
	if err := c.Unload(context.Background()); err != nil {
		t.Errorf("Unload with no worker = %v", err)
	}
}

func TestCallsWaitForUnload(t *testing.T) {
	c, log := started(t, "slow")
	pid := c.PID()
	release := make(chan struct{})
	gen := generateBlocked(t, c, &llm.Request{Prompt: "inflight", MaxTokens: 5}, release)
	unloaded := make(chan error, 1)
	go func() { unloaded <- c.Unload(context.Background()) }()
	waitFor(t, "the unload to begin", c.unloadInProgress)
	tokenized := make(chan error, 1)
	go func() {
		_, err := c.Tokenize(context.Background(), "during unload", false, false)
		tokenized <- err
	}()
	waitFor(t, "the call to wait", func() bool { return c.InFlight() == 2 })
	close(release)
	if r := <-gen; r.err != nil {
		t.Fatalf("generation during Unload: %v", r.err)
	}
	if err := <-unloaded; err != nil {
		t.Fatalf("Unload = %v", err)
	}
	if err := <-tokenized; err != nil {
		t.Fatalf("Tokenize made during Unload = %v", err)
	}
	// The worker's stderr reaches the log on its own schedule, not the socket's.
	waitFor(t, "the worker to log the call", func() bool { return tokenizedBy(log.String(), "during unload") != 0 })
	if by := tokenizedBy(log.String(), "during unload"); by == pid {
		t.Errorf("the call made during Unload ran on worker %d, want a new one (unloaded %d)", by, pid)
	}
	if got := c.PID(); got == 0 || got == pid {
		t.Errorf("PID = %d, want the new worker", got)
	}
}

func TestUnloadDeadlineKillsTheWorker(t *testing.T) {
	c, _ := started(t, "slow")
	pid := c.PID()
	release := make(chan struct{})
	close(release)
	gen := generateBlocked(t, c, &llm.Request{Prompt: "long"}, release) // about 30s of text
	ctx, cancel := context.WithCancel(context.Background())
	unloaded := make(chan error, 1)
	go func() { unloaded <- c.Unload(ctx) }()
	waitFor(t, "the unload to begin", c.unloadInProgress)
	cancel()
	if err := <-unloaded; !errors.Is(err, context.Canceled) {
		t.Fatalf("Unload with its context cancelled = %v, want context.Canceled", err)
	}
	r := <-gen
	if !errors.Is(r.err, llm.ErrEngineFailure) || !strings.Contains(r.err.Error(), "unloaded") {
		t.Fatalf("generation killed by Unload = %v, want ErrEngineFailure saying it was unloaded", r.err)
	}
	if errors.Is(r.err, ErrWorkerExited) {
		t.Errorf("generation killed by Unload = %v: matches ErrWorkerExited, which blames the prompt", r.err)
	}
	if c.Loaded() {
		t.Error("Loaded after Unload")
	}
	if _, err := c.Tokenize(context.Background(), "x", false, false); err != nil {
		t.Fatalf("Tokenize after Unload: %v", err)
	}
	if got := c.PID(); got == 0 || got == pid {
		t.Errorf("PID = %d, want a new worker (old %d)", got, pid)
	}
}

// TestUnloadCallsOffALoad: Unload during a load stops it; a caller waiting for that load gets a
// fresh worker afterwards.
func TestUnloadCallsOffALoad(t *testing.T) {
	c, log := newClient(t, "slow-load")
	startErr := make(chan error, 1)
	go func() { startErr <- c.Start(context.Background()) }()
	waitFor(t, "the load to begin", func() bool { return len(loadingPIDs(log.String())) == 1 })
	if err := c.Unload(context.Background()); err != nil {
		t.Fatalf("Unload during a load = %v", err)
	}
	first := loadingPIDs(log.String())[0]
	if err := syscall.Kill(first, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("worker %d loading during Unload: kill(0) = %v, want it gone", first, err)
	}
	if err := <-startErr; err != nil {
		t.Fatalf("Start waiting across the Unload = %v", err)
	}
	if got := c.PID(); got == 0 || got == first {
		t.Errorf("PID = %d, want a worker other than the called-off %d", got, first)
	}
}

func TestCloseAfterUnloadIsTerminal(t *testing.T) {
	c, _ := started(t, "ok")
	if err := c.Unload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); !errors.Is(err, llm.ErrEngineFailure) || !strings.Contains(err.Error(), "shut down") {
		t.Errorf("Start after Close = %v, want a shut-down engine failure", err)
	}
	if err := c.Unload(context.Background()); err != nil || c.Loaded() {
		t.Errorf("Unload after Close = %v, loaded %v", err, c.Loaded())
	}
}

// TestStartNotTiedToCaller: a caller giving up on a load does not stop it.
func TestStartNotTiedToCaller(t *testing.T) {
	c, log := newClient(t, "slow-load")
	ctx, cancel := context.WithCancel(context.Background())
	startErr := make(chan error, 1)
	go func() { startErr <- c.Start(ctx) }()
	waitFor(t, "the load to begin", func() bool { return len(loadingPIDs(log.String())) == 1 })
	cancel()
	if err := <-startErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Start = %v, want context.Canceled", err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("second Start = %v", err)
	}
	if pids := loadingPIDs(log.String()); len(pids) != 1 || c.PID() != pids[0] {
		t.Errorf("workers loaded %v, running %d; want the first load to have carried on", pids, c.PID())
	}
}

// TestHungWorkerReplaced: a stopped worker fails its pings, is killed with its calls, and the
// next call gets a new worker.
func TestHungWorkerReplaced(t *testing.T) {
	c, _ := started(t, "slow", func(o *Options) {
		o.PingInterval, o.PingTimeout = 20*time.Millisecond, 2*time.Second
	})
	pid := c.PID()
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	// A busy worker answers its pings: a whole generation runs on the one worker.
	if events, err := collect(context.Background(), c, &llm.Request{Prompt: "busy", MaxTokens: 20}); err != nil || textOf(events) != childSlowReply[:20] {
		t.Fatalf("Generate = %q, %v", textOf(events), err)
	}
	if c.PID() != pid {
		t.Fatalf("PID after a generation with pings = %d, want the same worker %d", c.PID(), pid)
	}

	release := make(chan struct{})
	close(release)
	gen := generateBlocked(t, c, &llm.Request{Prompt: "hung"}, release) // about 30s of text
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var r outcome
	select {
	case r = <-gen:
	case <-time.After(time.Minute):
		t.Fatal("the call on a stopped worker never ended")
	}
	if !errors.Is(r.err, llm.ErrEngineFailure) || !errors.Is(r.err, ErrWorkerExited) || !strings.Contains(r.err.Error(), "stopped answering") {
		t.Fatalf("call on a stopped worker = %v, want ErrEngineFailure and ErrWorkerExited saying it stopped answering", r.err)
	}
	waitWithin(t, time.Minute, "the hung worker to be gone", func() bool { return !c.Loaded() })
	if _, err := c.Tokenize(context.Background(), "x", false, false); err != nil {
		t.Fatalf("Tokenize after the hung worker: %v", err)
	}
	if got := c.PID(); got == 0 || got == pid {
		t.Errorf("PID = %d, want a new worker (hung %d)", got, pid)
	}
}

// TestBoundedCallsHaveADeadline: tokenize on a worker that does not answer fails instead of
// waiting for the ping to notice.
func TestBoundedCallsHaveADeadline(t *testing.T) {
	c, _ := started(t, "ok", func(o *Options) { o.PingInterval = time.Hour })
	c.callTimeout = 200 * time.Millisecond
	pid := c.PID()
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	_, err := c.Tokenize(context.Background(), "x", false, false)
	if !errors.Is(err, llm.ErrEngineFailure) || !strings.Contains(err.Error(), "did not answer the tokenize call") {
		t.Errorf("Tokenize on a stopped worker = %v, want an engine failure saying it did not answer", err)
	}
	if _, err := c.Slots(context.Background()); !errors.Is(err, llm.ErrEngineFailure) {
		t.Errorf("Slots on a stopped worker = %v, want an engine failure", err)
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	c.callTimeout = replyTimeout
	if _, err := c.Tokenize(context.Background(), "x", false, false); err != nil || c.PID() != pid {
		t.Errorf("Tokenize once the worker runs again = %v on %d, want success on %d", err, c.PID(), pid)
	}
}

// TestFatalEngineExitsTheWorker: an engine that breaks for good fails its calls, the worker
// exits, and the next call runs on a new one.
func TestFatalEngineExitsTheWorker(t *testing.T) {
	c, log := started(t, "fatal-after-3")
	pid := c.PID()
	events, err := collect(context.Background(), c, &llm.Request{Prompt: "hi"})
	if !errors.Is(err, llm.ErrEngineFailure) || !errors.Is(err, ErrWorkerExited) || !strings.Contains(err.Error(), "llama_decode failed with code -3") {
		t.Fatalf("Generate = %v, want ErrEngineFailure and ErrWorkerExited with the engine's message", err)
	}
	if strings.Count(err.Error(), llm.ErrEngineFailure.Error()) != 1 {
		t.Errorf("error %q repeats the sentinel's text", err)
	}
	if textOf(events) != "Hel" {
		t.Errorf("text before the failure = %q, want %q", textOf(events), "Hel")
	}
	if c.Loaded() {
		t.Error("the worker with a broken engine is still loaded")
	}
	if !strings.Contains(log.String(), "serve: engine failed") {
		t.Errorf("worker log %q: want Serve's failure", log.String())
	}
	if events, err := collect(context.Background(), c, &llm.Request{Prompt: "again", MaxTokens: 3}); err != nil || textOf(events) != "Hel" {
		t.Fatalf("Generate after the failure = %q, %v", textOf(events), err)
	}
	if got := c.PID(); got == 0 || got == pid {
		t.Errorf("PID = %d, want a new worker (old %d)", got, pid)
	}
}

func TestVocabOnlyWorker(t *testing.T) {
	if args := (Options{Command: []string{"w"}, VocabOnly: true}).args("s"); !slices.Contains(args, "--vocab-only") {
		t.Errorf("vocab-only args %v lack --vocab-only", args)
	}
	if args := (Options{Command: []string{"w"}}).args("s"); slices.Contains(args, "--vocab-only") {
		t.Errorf("full worker args %v have --vocab-only", args)
	}
	c, _ := started(t, "ok", func(o *Options) { o.VocabOnly = true })
	got, err := c.Tokenize(context.Background(), "Hello world", true, true)
	want, _ := enginetest.New(64, "").Tokenize(context.Background(), "Hello world", true, true)
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("Tokenize = %v, %v; want %v", got, err, want)
	}
	_, err = collect(context.Background(), c, &llm.Request{Prompt: "hi"})
	if !errors.Is(err, llm.ErrEngineFailure) || !strings.Contains(err.Error(), "not for generation") {
		t.Errorf("Generate on a vocab-only worker = %v, want an engine failure saying it cannot generate", err)
	}
}

// TestCancelledCallerStartsNoWorker: a call whose context has ended when it reaches a client
// with no worker running returns the context's error and launches none (a request the model
// manager stopped must not leave a worker behind that no one knows).
func TestCancelledCallerStartsNoWorker(t *testing.T) {
	c, log := newClient(t, "ok")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := collect(ctx, c, &llm.Request{Prompt: "hi"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Generate with a cancelled context = %v, want context.Canceled", err)
	}
	if err := c.Start(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Start with a cancelled context = %v, want context.Canceled", err)
	}
	if st := c.launching(); st != nil || c.Loaded() || len(loadingPIDs(log.String())) != 0 {
		t.Fatalf("a cancelled caller launched a worker (launching %v, loaded %v, log %q)", st != nil, c.Loaded(), log.String())
	}
}
