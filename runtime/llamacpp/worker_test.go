package llamacpp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ollama/ollama/llama"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/worker"
)

// These tests run real workers: a worker.Client starts this test binary again with workerEnv
// set, and TestMain then serves llama.cpp like `superfluid worker` does.
const workerEnv = "LLAMACPP_TEST_WORKER"

// runWorker is the test worker: the app's worker flags, plus -fail-decode-after N, which makes
// every llama_decode after the first N fail the way a fatal one does.
func runWorker(args []string) int {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	var opts Options
	var socket string
	fs.StringVar(&opts.ModelPath, "model", "", "")
	fs.StringVar(&socket, "socket", "", "")
	fs.IntVar(&opts.ContextLength, "ctx", 0, "")
	fs.IntVar(&opts.Parallel, "parallel", 0, "")
	fs.IntVar(&opts.Threads, "threads", 0, "")
	fs.BoolVar(&opts.VocabOnly, "vocab-only", false, "")
	fs.StringVar(&opts.Speculative, "speculative", "", "")
	fs.IntVar(&opts.DraftTokens, "draft-tokens", 0, "")
	fs.StringVar(&opts.DraftModelPath, "draft-model", "", "")
	fs.StringVar(&opts.ProjectorPath, "mmproj", "", "")
	failAfter := fs.Int("fail-decode-after", -1, "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	hello := func(v any) { _ = json.NewEncoder(os.Stdout).Encode(v) }
	e, err := Load(opts)
	if err != nil {
		hello(worker.LoadError(err))
		return 1
	}
	defer e.Close()
	if *failAfter >= 0 {
		decodes := 0
		e.decode = func(b *llama.Batch) error {
			if decodes++; decodes > *failAfter {
				return errors.New("llama_decode failed with code -3")
			}
			return e.lctx.Decode(b)
		}
	}
	l, err := net.Listen("unix", socket)
	if err != nil {
		hello(map[string]string{"error": err.Error()})
		return 1
	}
	info := e.Info()
	hello(map[string]*llm.ModelInfo{"info": &info})
	if err := worker.Serve(l, e); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 1
	}
	return 0
}

// lockedBuffer collects a worker's log for a failing test's message.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startWorker starts a real worker on opts.ModelPath (the test model when empty), closed at
// cleanup.
func startWorker(t *testing.T, opts worker.Options, extra ...string) (*worker.Client, *lockedBuffer) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	log := &lockedBuffer{}
	opts.Command = append([]string{exe}, extra...)
	opts.Env = []string{workerEnv + "=1"}
	if opts.ModelPath == "" {
		opts.ModelPath = testModelPath
	}
	opts.Log = log
	opts.StartTimeout = 2 * time.Minute
	c := worker.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("start worker: %v\nlog:\n%s", err, log)
	}
	return c, log
}

// rss is a process's resident memory in kB, from /proc.
func rss(t *testing.T, pid int) int {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatalf("VmRSS line %q: %v", line, err)
			}
			return kb
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// TestVocabOnlyWorker: a vocab-only worker tokenizes like a full one, in less memory, and
// refuses to generate.
func TestVocabOnlyWorker(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	ctx := context.Background()
	full, _ := startWorker(t, worker.Options{ContextLength: 2048, Parallel: 4, Threads: 1})
	vocab, _ := startWorker(t, worker.Options{VocabOnly: true})
	// A generation makes the full worker touch its weights, KV cache and compute buffers.
	if err := full.Generate(ctx, greedy("Once upon a time", 16), func(llm.Event) error { return nil }); err != nil {
		t.Fatalf("Generate on the full worker: %v", err)
	}
	want, err := full.Tokenize(ctx, "Hello world", true, true)
	if err != nil {
		t.Fatal(err)
	}
	got, err := vocab.Tokenize(ctx, "Hello world", true, true)
	if err != nil || !slices.Equal(got, want) || len(got) < 2 {
		t.Errorf("vocab-only Tokenize = %v, %v; want %v as the full worker", got, err, want)
	}
	fullKB, vocabKB := rss(t, full.PID()), rss(t, vocab.PID())
	t.Logf("VmRSS: full worker %d kB, vocab-only worker %d kB", fullKB, vocabKB)
	if vocabKB >= fullKB {
		t.Errorf("vocab-only worker uses %d kB, the full one %d kB; want less", vocabKB, fullKB)
	}
	err = vocab.Generate(ctx, greedy("Once", 4), func(llm.Event) error { return nil })
	if !errors.Is(err, llm.ErrEngineFailure) || !strings.Contains(err.Error(), "not for generation") {
		t.Errorf("Generate on a vocab-only worker = %v, want an engine failure saying it is not loaded for generation", err)
	}
	if _, err := vocab.Tokenize(ctx, "still", false, false); err != nil || !vocab.Loaded() {
		t.Errorf("vocab-only worker after a refused Generate: %v (loaded %v)", err, vocab.Loaded())
	}
}

// TestFatalDecodeExitsTheWorker: a fatal llama_decode in a real worker fails the call with
// worker.ErrWorkerExited, the worker exits, and the next call runs on a new worker.
func TestFatalDecodeExitsTheWorker(t *testing.T) {
	// Each worker decodes 3 batches, then fails: enough for a 2-token reply, not a long one.
	c, log := startWorker(t, worker.Options{ContextLength: 256, Parallel: 2, Threads: 1}, "-fail-decode-after=3")
	pid := c.PID()
	ctx := context.Background()
	req := greedy("Once upon a time", 0)
	req.IgnoreEOS = true
	err := c.Generate(ctx, req, func(llm.Event) error { return nil })
	if !errors.Is(err, llm.ErrEngineFailure) || !errors.Is(err, worker.ErrWorkerExited) || !strings.Contains(err.Error(), "code -3") {
		t.Fatalf("Generate through a fatal decode = %v, want ErrEngineFailure and ErrWorkerExited\nlog:\n%s", err, log)
	}
	if c.Loaded() {
		t.Errorf("worker %d still loaded after a fatal decode", pid)
	}
	if !strings.Contains(log.String(), "serve: engine failed") {
		t.Errorf("the worker did not exit through Serve's failure; log:\n%s", log)
	}
	var text strings.Builder
	err = c.Generate(ctx, greedy("Once upon a time", 2), func(ev llm.Event) error {
		text.WriteString(ev.Text)
		return nil
	})
	if err != nil {
		t.Fatalf("Generate after the fatal decode: %v", err)
	}
	if got := c.PID(); got == 0 || got == pid {
		t.Errorf("PID = %d, want a new worker (old %d)", got, pid)
	}
}
