package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
)

func TestGenerateMatchesInProcessFake(t *testing.T) {
	c, _ := started(t, "ok")
	info := c.Info()
	if info.ContextLength != 64 || info.Parallel != 2 || info.Threads != 1 || info.Architecture != "fake" {
		t.Errorf("Info = %+v, want the fake's with ctx 64, parallel 2, threads 1", info)
	}
	tests := []struct {
		name string
		req  llm.Request
		text string
		stop string
	}{
		{"whole reply", llm.Request{Prompt: "hi", AddSpecial: true}, childReply, llm.FinishStop},
		{"max tokens", llm.Request{Prompt: "hi", MaxTokens: 5}, "Hello", llm.FinishLength},
		{"stop string", llm.Request{Prompt: "hi", Stop: []string{", w"}}, "Hello", llm.FinishStop},
		{"fills the context", llm.Request{Prompt: strings.Repeat("x", 58), AddSpecial: true}, "Hello", llm.FinishLength},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := collect(context.Background(), c, &tt.req)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			want, err := collect(context.Background(), enginetest.New(64, childReply), &tt.req)
			if err != nil {
				t.Fatalf("fake Generate: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("events through the worker differ from the fake's:\ngot  %s\nwant %s", dump(got), dump(want))
			}
			// The order itself: Started first, Done last, only text in between.
			if len(got) < 2 || got[0].Started == nil || got[len(got)-1].Done == nil {
				t.Fatalf("events %s: want Started first and Done last", dump(got))
			}
			for _, ev := range got[1 : len(got)-1] {
				if ev.Started != nil || ev.Done != nil {
					t.Errorf("Started or Done in the middle of %s", dump(got))
				}
			}
			if text := textOf(got); text != tt.text {
				t.Errorf("text = %q, want %q", text, tt.text)
			}
			done := got[len(got)-1].Done
			if done.FinishReason != tt.stop {
				t.Errorf("finish reason = %q, want %q", done.FinishReason, tt.stop)
			}
			prompt, _ := enginetest.New(64, "").Tokenize(context.Background(), tt.req.Prompt, tt.req.AddSpecial, true)
			if got[0].Started.PromptTokens != len(prompt) || done.Usage.PromptTokens != len(prompt) {
				t.Errorf("prompt tokens = %d (started), %d (done); want %d", got[0].Started.PromptTokens, done.Usage.PromptTokens, len(prompt))
			}
		})
	}
}

func dump(events []llm.Event) string {
	var parts []string
	for _, ev := range events {
		switch {
		case ev.Started != nil:
			parts = append(parts, fmt.Sprintf("started%+v", *ev.Started))
		case ev.Done != nil:
			parts = append(parts, fmt.Sprintf("done%+v", *ev.Done))
		default:
			parts = append(parts, fmt.Sprintf("%q/%d", ev.Text, ev.Tokens))
		}
	}
	return strings.Join(parts, " ")
}

func TestTokenize(t *testing.T) {
	c, _ := started(t, "ok")
	fake := enginetest.New(64, "")
	for _, tt := range []struct {
		text       string
		addSpecial bool
	}{{"Hello", true}, {"Hello", false}, {"", true}, {"é", false}} {
		got, err := c.Tokenize(context.Background(), tt.text, tt.addSpecial, true)
		if err != nil {
			t.Fatalf("Tokenize(%q): %v", tt.text, err)
		}
		want, _ := fake.Tokenize(context.Background(), tt.text, tt.addSpecial, true)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Tokenize(%q, %v) = %v, want %v", tt.text, tt.addSpecial, got, want)
		}
	}
	got, err := c.Tokenize(context.Background(), "", false, false)
	if err != nil || len(got) != 0 {
		t.Errorf("Tokenize(\"\") = %v, %v; want no tokens", got, err)
	}
}

func TestTypedErrorsCrossTheSocket(t *testing.T) {
	c, _ := started(t, "fail-after-3")
	pid := c.PID()

	_, err := collect(context.Background(), c, &llm.Request{Prompt: strings.Repeat("x", 70), AddSpecial: true})
	var cl *llm.ContextLengthError
	if !errors.As(err, &cl) || cl.PromptTokens != 71 || cl.ContextLength != 64 {
		t.Errorf("long prompt: err = %v, want a ContextLengthError 71 > 64", err)
	}
	if !errors.Is(err, llm.ErrContextLength) {
		t.Errorf("long prompt: %v does not match llm.ErrContextLength", err)
	}

	_, err = collect(context.Background(), c, &llm.Request{Prompt: "invalid prompt"})
	if !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), "the prompt is invalid") {
		t.Errorf("invalid prompt: err = %v, want llm.ErrInvalidInput with the worker's message", err)
	}
	if _, err := c.Tokenize(context.Background(), "invalid text", true, true); !errors.Is(err, llm.ErrInvalidInput) {
		t.Errorf("invalid Tokenize: err = %v, want llm.ErrInvalidInput", err)
	}

	events, err := collect(context.Background(), c, &llm.Request{Prompt: "hi"})
	if !errors.Is(err, llm.ErrEngineFailure) || !strings.Contains(err.Error(), "kaboom") {
		t.Errorf("failing engine: err = %v, want llm.ErrEngineFailure with the engine's message", err)
	}
	if text := textOf(events); text != "Hel" {
		t.Errorf("failing engine: text before the error = %q, want %q", text, "Hel")
	}
	if errors.Is(err, llm.ErrInvalidInput) || errors.Is(err, llm.ErrContextLength) || errors.Is(err, ErrWorkerExited) {
		t.Errorf("engine error %v matches the wrong sentinel", err)
	}
	// None of these cost the worker.
	if got := c.PID(); got != pid {
		t.Errorf("PID after request errors = %d, want the same worker %d", got, pid)
	}
}

func TestLoadFailure(t *testing.T) {
	t.Run("error hello", func(t *testing.T) {
		c, _ := newClient(t, "fail-load")
		err := c.Start(context.Background())
		if !errors.Is(err, llm.ErrEngineFailure) || !errors.Is(err, ErrLoad) || !strings.Contains(err.Error(), "bad magic in fail-load") {
			t.Fatalf("Start = %v, want llm.ErrEngineFailure and ErrLoad with the worker's message", err)
		}
		if errors.Is(err, ErrWorkerExited) {
			t.Errorf("Start = %v: a refused load matches ErrWorkerExited", err)
		}
		if c.Loaded() {
			t.Error("Loaded after a failed load")
		}
		// A call tries again and fails the same way.
		if _, err := c.Tokenize(context.Background(), "x", false, false); !errors.Is(err, llm.ErrEngineFailure) {
			t.Errorf("Tokenize after a failed load = %v, want llm.ErrEngineFailure", err)
		}
	})
	t.Run("exit without hello", func(t *testing.T) {
		c, _ := newClient(t, "exit-silent")
		err := c.Start(context.Background())
		if !errors.Is(err, llm.ErrEngineFailure) || !strings.Contains(err.Error(), "exited") ||
			!strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "GGML_ASSERT: boom while loading") {
			t.Fatalf("Start = %v, want llm.ErrEngineFailure saying the worker exited, with its status and last log line", err)
		}
		if !errors.Is(err, ErrWorkerExited) || errors.Is(err, ErrLoad) {
			t.Errorf("Start = %v, want ErrWorkerExited (and not ErrLoad)", err)
		}
	})
	t.Run("start timeout", func(t *testing.T) {
		c, _ := newClient(t, "hang")
		c.opts.StartTimeout = 200 * time.Millisecond
		err := c.Start(context.Background())
		if !errors.Is(err, llm.ErrEngineFailure) || !strings.Contains(err.Error(), "did not load within") {
			t.Fatalf("Start = %v, want llm.ErrEngineFailure saying the worker did not load", err)
		}
	})
	t.Run("cancelled start", func(t *testing.T) {
		c, _ := newClient(t, "hang")
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		if err := c.Start(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Start = %v, want context.Canceled", err)
		}
	})
	t.Run("no command", func(t *testing.T) {
		c := NewClient(Options{ModelPath: "m.gguf"})
		if err := c.Start(context.Background()); !errors.Is(err, llm.ErrEngineFailure) {
			t.Fatalf("Start = %v, want llm.ErrEngineFailure", err)
		}
	})
}

func TestWorkerKilledMidGeneration(t *testing.T) {
	c, _ := started(t, "slow")
	pid := c.PID()
	texts := 0
	err := c.Generate(context.Background(), &llm.Request{Prompt: "hi"}, func(ev llm.Event) error {
		if ev.Text != "" {
			texts++
			if texts == 1 {
				if err := syscall.Kill(c.PID(), syscall.SIGKILL); err != nil {
					t.Errorf("kill the worker: %v", err)
				}
			}
		}
		return nil
	})
	if !errors.Is(err, llm.ErrEngineFailure) || !strings.Contains(err.Error(), "worker exited") || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("Generate = %v, want llm.ErrEngineFailure saying the worker exited (killed)", err)
	}
	if !errors.Is(err, ErrWorkerExited) {
		t.Errorf("Generate = %v, want ErrWorkerExited", err)
	}
	if c.Loaded() {
		t.Error("Loaded after the worker died")
	}
	events, err := collect(context.Background(), c, &llm.Request{Prompt: "again", MaxTokens: 3})
	if err != nil {
		t.Fatalf("Generate after the crash: %v", err)
	}
	if textOf(events) != "slo" {
		t.Errorf("text after restart = %q, want %q", textOf(events), "slo")
	}
	if got := c.PID(); got == pid || got == 0 {
		t.Errorf("PID after restart = %d, want a new worker (old %d)", got, pid)
	}
}

func TestWorkerAbortsMidGeneration(t *testing.T) {
	c, _ := started(t, "abort-after-3")
	pid := c.PID()
	events, err := collect(context.Background(), c, &llm.Request{Prompt: "hi"})
	if !errors.Is(err, llm.ErrEngineFailure) || !strings.Contains(err.Error(), "exit status 134") ||
		!strings.Contains(err.Error(), "GGML_ASSERT: simulated abort") {
		t.Fatalf("Generate = %v, want llm.ErrEngineFailure with the exit status and the last log line", err)
	}
	if !errors.Is(err, ErrWorkerExited) {
		t.Errorf("Generate = %v, want ErrWorkerExited", err)
	}
	if textOf(events) != "Hel" {
		t.Errorf("text before the abort = %q, want %q", textOf(events), "Hel")
	}
	if _, err := c.Tokenize(context.Background(), "x", true, true); err != nil {
		t.Fatalf("Tokenize after the abort: %v", err)
	}
	if got := c.PID(); got == pid || got == 0 {
		t.Errorf("PID after restart = %d, want a new worker (old %d)", got, pid)
	}
}

func TestCancelMidGeneration(t *testing.T) {
	c, log := started(t, "slow")
	pid := c.PID()
	if _, err := collect(context.Background(), c, &llm.Request{Prompt: "warm", MaxTokens: 2}); err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	texts := 0
	err := c.Generate(ctx, &llm.Request{Prompt: "cancelme"}, func(ev llm.Event) error {
		if ev.Text != "" {
			texts++
			if texts == 2 {
				cancel()
			}
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Generate = %v, want context.Canceled", err)
	}
	if texts >= len(childSlowReply)/2 {
		t.Errorf("got %d text events after cancelling at the second", texts)
	}
	// The worker's generation stops too, and the worker stays up.
	waitFor(t, "the worker to see the cancellation", func() bool {
		return strings.Contains(log.String(), `generate "cancelme" ended: context canceled`)
	})
	events, err := collect(context.Background(), c, &llm.Request{Prompt: "after", MaxTokens: 4})
	if err != nil || textOf(events) != "slow" {
		t.Fatalf("Generate after cancelling = %q, %v; want %q", textOf(events), err, "slow")
	}
	if got := c.PID(); got != pid {
		t.Errorf("PID after cancelling = %d, want the same worker %d", got, pid)
	}
	waitFor(t, "goroutines to wind down", func() bool { return runtime.NumGoroutine() <= before })
}

func TestEmitErrorCancels(t *testing.T) {
	c, log := started(t, "slow")
	errStop := errors.New("client went away")
	err := c.Generate(context.Background(), &llm.Request{Prompt: "emitfail"}, func(ev llm.Event) error {
		if ev.Text != "" {
			return errStop
		}
		return nil
	})
	if !errors.Is(err, errStop) {
		t.Fatalf("Generate = %v, want the emit error", err)
	}
	waitFor(t, "the worker to see the cancellation", func() bool {
		return strings.Contains(log.String(), `generate "emitfail" ended: context canceled`)
	})
}

// A call whose context is already done must report the context's error, not a worker failure.
func TestCancelledBeforeCall(t *testing.T) {
	c, _ := started(t, "ok")
	pid := c.PID()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := collect(ctx, c, &llm.Request{Prompt: "hi"}); !errors.Is(err, context.Canceled) || errors.Is(err, llm.ErrEngineFailure) {
		t.Errorf("Generate with a cancelled context = %v, want context.Canceled", err)
	}
	if _, err := c.Tokenize(ctx, "hi", true, true); !errors.Is(err, context.Canceled) || errors.Is(err, llm.ErrEngineFailure) {
		t.Errorf("Tokenize with a cancelled context = %v, want context.Canceled", err)
	}
	if c.PID() != pid {
		t.Errorf("PID = %d, want the same worker %d", c.PID(), pid)
	}
}

func TestSocketDirectory(t *testing.T) {
	c, _ := started(t, "ok")
	socket := c.Info().Path
	dir := filepath.Dir(socket)
	if !strings.HasPrefix(filepath.Base(dir), "superfluid-worker-") {
		t.Fatalf("socket %s is not in a worker directory", socket)
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := st.Mode().Perm(); perm != 0o700 {
		t.Errorf("socket directory mode = %v, want 0700", perm)
	}
	if st, err := os.Stat(socket); err != nil || st.Mode()&os.ModeSocket == 0 {
		t.Errorf("socket %s: %v, %v; want a unix socket", socket, st, err)
	}
	pid := c.PID()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket directory after Close: %v, want it removed", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("worker %d after Close: kill(0) = %v, want it gone", pid, err)
	}
	if c.PID() != 0 || c.Loaded() {
		t.Errorf("PID after Close = %d, want 0", c.PID())
	}
	if _, err := collect(context.Background(), c, &llm.Request{Prompt: "hi"}); !errors.Is(err, llm.ErrEngineFailure) {
		t.Errorf("Generate after Close = %v, want llm.ErrEngineFailure", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

func TestSocketDirectoryRemovedWhenWorkerDies(t *testing.T) {
	c, _ := started(t, "ok")
	dir := filepath.Dir(c.Info().Path)
	if err := syscall.Kill(c.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the socket directory to go", func() bool {
		_, err := os.Stat(dir)
		return errors.Is(err, os.ErrNotExist)
	})
}

func TestConcurrentCalls(t *testing.T) {
	c, _ := newClient(t, "ok") // not started: the calls race to start the one worker
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	pids := make(chan int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			prompt := fmt.Sprintf("prompt %d", i)
			events, err := collect(context.Background(), c, &llm.Request{Prompt: prompt, AddSpecial: true})
			if err != nil {
				errs <- fmt.Errorf("call %d: %w", i, err)
				return
			}
			done := events[len(events)-1].Done
			if textOf(events) != childReply || done == nil || done.Usage.PromptTokens != len(prompt)+1 ||
				done.Usage.CompletionTokens != len(childReply) {
				errs <- fmt.Errorf("call %d: got %s", i, dump(events))
			}
			if _, err := c.Tokenize(context.Background(), prompt, false, false); err != nil {
				errs <- fmt.Errorf("tokenize %d: %w", i, err)
			}
			pids <- c.PID()
		}()
	}
	wg.Wait()
	close(errs)
	close(pids)
	for err := range errs {
		t.Error(err)
	}
	first := 0
	for pid := range pids {
		if first == 0 {
			first = pid
		}
		if pid != first {
			t.Errorf("calls ran on workers %d and %d, want one", first, pid)
		}
	}
}

// TestStatusDuringLoad: while one call waits for a slow load, status queries answer at once
// and a second caller shares the launch instead of starting another worker.
func TestStatusDuringLoad(t *testing.T) {
	c, _ := newClient(t, "hang")
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan error, 2)
	for range 2 {
		go func() { started <- c.Start(ctx) }()
	}
	for c.launching() == nil { // wait until a launch is underway
		time.Sleep(time.Millisecond)
	}
	if c.Loaded() || c.PID() != 0 || c.Info().ContextLength != 0 {
		t.Fatal("a loading worker reports itself loaded")
	}
	select {
	case err := <-started:
		t.Fatalf("Start returned during the load: %v", err)
	default:
	}
	cancel()
	for range 2 {
		if err := <-started; !errors.Is(err, context.Canceled) {
			t.Fatalf("Start after cancel: %v", err)
		}
	}
}

// TestSocketDir: worker sockets live in private directories under the configured parent, and
// a parent too long for a unix socket path falls back to the temp dir.
func TestSocketDir(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "run")
	dir, err := socketDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dir)
	if err != nil || filepath.Dir(dir) != parent || st.Mode().Perm() != 0o700 {
		t.Fatalf("dir %s (%v), mode %v", dir, err, st.Mode())
	}
	long := filepath.Join(t.TempDir(), strings.Repeat("x", 100))
	dir, err = socketDir(long)
	if err != nil || strings.HasPrefix(dir, long) || !strings.HasPrefix(dir, os.TempDir()) {
		t.Fatalf("long parent: %s (%v)", dir, err)
	}
	os.RemoveAll(dir)
}
