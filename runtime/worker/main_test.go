package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
)

// The test binary doubles as the worker program: a Client started by these tests runs it again
// with childEnv set, and TestMain then behaves like `superfluid worker` serving an enginetest
// fake instead of llama.cpp.
const childEnv = "WORKER_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(runChild(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// Child behaviours, chosen by the --model "path" (comma-separated words):
//
//	ok           reply childReply at once
//	utf8         reply childUTF8Reply at once (one token per byte, so some are part of a character)
//	slow         reply a long text, one token every childDelay
//	fail-load    print an error hello and exit
//	bad-projector print the hello of a load refused for a projector made for another model
//	exit-silent  write a log line to stderr and exit without a hello
//	hang         never print a hello
//	fail-after-N the engine fails with "kaboom" after N tokens (the worker survives)
//	abort-after-N the worker process dies (like a llama.cpp abort) after N text events
//	fatal-after-N the engine breaks for good after N text events (like a fatal llama_decode):
//	             it reports the failure as a Failer, and Serve makes the worker exit
//	slow-load    take childLoadDelay to load
//	embed        an embedding model (enginetest.NewEmbedder, 8 floats per vector)
//
// A prompt starting with "invalid" fails with llm.ErrInvalidInput, from Generate and Tokenize.
// With --vocab-only the worker only tokenizes. Every worker logs "loading pid=N" to stderr as
// it starts, and "tokenize "TEXT" pid=N" for each Tokenize call.
const (
	childReply     = "Hello, world!"
	childUTF8Reply = "né — ok"
	childDelay     = 10 * time.Millisecond
	childLoadDelay = 500 * time.Millisecond
)

var childSlowReply = strings.Repeat("slow text ", 300)

func runChild(args []string) int {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	model := fs.String("model", "", "")
	socket := fs.String("socket", "", "")
	ctxLen := fs.Int("ctx", 0, "")
	parallel := fs.Int("parallel", 0, "")
	threads := fs.Int("threads", 0, "")
	vocabOnly := fs.Bool("vocab-only", false, "")
	mmproj := fs.String("mmproj", "", "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	hello := func(v any) { _ = json.NewEncoder(os.Stdout).Encode(v) }
	fmt.Fprintf(os.Stderr, "loading pid=%d\n", os.Getpid())

	fake := enginetest.New(*ctxLen, childReply)
	eng := &childEngine{Engine: fake, abortAfter: -1, fatalAfter: -1, vocabOnly: *vocabOnly, failed: make(chan struct{})}
	for _, word := range strings.Split(*model, ",") {
		switch {
		case word == "ok":
		case word == "utf8":
			fake.Reply = childUTF8Reply
		case word == "slow":
			fake.Reply, fake.TokenDelay = childSlowReply, childDelay
		case word == "fail-load":
			fmt.Fprintln(os.Stderr, "llama_model_load: error loading model")
			hello(map[string]string{"error": "bad magic in " + *model})
			return 1
		case word == "bad-projector":
			hello(LoadError(fmt.Errorf("%w: the projector %s does not fit the model %s", llm.ErrInvalidInput, *mmproj, *model)))
			return 1
		case word == "exit-silent":
			fmt.Fprintln(os.Stderr, "GGML_ASSERT: boom while loading")
			return 3
		case word == "hang":
			select {}
		case strings.HasPrefix(word, "fail-after-"):
			fake.Fail = errors.New("kaboom")
			fake.FailAfter, _ = strconv.Atoi(strings.TrimPrefix(word, "fail-after-"))
		case strings.HasPrefix(word, "abort-after-"):
			eng.abortAfter, _ = strconv.Atoi(strings.TrimPrefix(word, "abort-after-"))
		case strings.HasPrefix(word, "fatal-after-"):
			eng.fatalAfter, _ = strconv.Atoi(strings.TrimPrefix(word, "fatal-after-"))
		case word == "term-log":
			// rev21a: log a SIGTERM (the retire's polite ask) and exit on it, as the real worker does.
			termCh := make(chan os.Signal, 1)
			signal.Notify(termCh, syscall.SIGTERM)
			go func() {
				<-termCh
				fmt.Fprintf(os.Stderr, "sigterm pid=%d\n", os.Getpid())
				os.Exit(0)
			}()
		case word == "term-slow":
			// A worker whose engine takes a while to save its lanes after SIGTERM.
			termCh := make(chan os.Signal, 1)
			signal.Notify(termCh, syscall.SIGTERM)
			go func() {
				<-termCh
				time.Sleep(1500 * time.Millisecond)
				fmt.Fprintf(os.Stderr, "saved pid=%d\n", os.Getpid())
				os.Exit(0)
			}()
		case word == "term-stuck":
			// rev21a: a worker whose engine never finishes closing: SIGTERM does nothing.
			signal.Ignore(syscall.SIGTERM)
		case word == "slow-load":
			time.Sleep(childLoadDelay)
		case word == "embed":
			fake = enginetest.NewEmbedder(*ctxLen, 8, llm.PoolingMean)
			eng.Engine = fake
		default:
			hello(map[string]string{"error": "unknown test model " + word})
			return 1
		}
	}
	// The test reads the socket path from Info().Path.
	eng.info = fake.Info()
	eng.info.Path, eng.info.Parallel, eng.info.Threads = *socket, *parallel, *threads
	eng.info.Projector = *mmproj // --mmproj reached the worker

	l, err := net.Listen("unix", *socket)
	if err != nil {
		hello(map[string]string{"error": "listen: " + err.Error()})
		return 1
	}
	hello(map[string]*llm.ModelInfo{"info": &eng.info})
	if err := Serve(l, eng); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 1
	}
	return 0
}

// childEngine wraps the fake: it logs the end of every generation to stderr (the tests read it
// through Options.Log to see what the worker side saw), rejects "invalid" prompts and can die
// mid-generation or break for good (a Failer).
type childEngine struct {
	*enginetest.Engine
	info       llm.ModelInfo
	abortAfter int
	fatalAfter int
	vocabOnly  bool

	failOnce sync.Once
	failed   chan struct{}
	failure  error
}

func (e *childEngine) Info() llm.ModelInfo     { return e.info }
func (e *childEngine) Failed() <-chan struct{} { return e.failed }
func (e *childEngine) Failure() error          { return e.failure }

func (e *childEngine) fail(err error) {
	e.failOnce.Do(func() {
		e.failure = err
		close(e.failed)
	})
}

func (e *childEngine) Tokenize(ctx context.Context, text string, addSpecial, parseSpecial bool) ([]int, error) {
	fmt.Fprintf(os.Stderr, "tokenize %q pid=%d\n", text, os.Getpid())
	if strings.HasPrefix(text, "invalid") {
		return nil, fmt.Errorf("%w: the text is invalid", llm.ErrInvalidInput)
	}
	return e.Engine.Tokenize(ctx, text, addSpecial, parseSpecial)
}

func (e *childEngine) Generate(ctx context.Context, req *llm.Request, emit func(llm.Event) error) error {
	if e.vocabOnly {
		return fmt.Errorf("%w: the model is loaded for tokenizing only (vocab-only), not for generation", llm.ErrEngineFailure)
	}
	if strings.HasPrefix(req.Prompt, "invalid") {
		return fmt.Errorf("%w: the prompt is invalid", llm.ErrInvalidInput)
	}
	texts := 0
	errFatal := fmt.Errorf("%w: llama_decode: llama_decode failed with code -3", llm.ErrEngineFailure)
	err := e.Engine.Generate(ctx, req, func(ev llm.Event) error {
		if ev.Text != "" {
			texts++
			if e.abortAfter >= 0 && texts > e.abortAfter {
				fmt.Fprintln(os.Stderr, "GGML_ASSERT: simulated abort")
				os.Exit(134)
			}
			if e.fatalAfter >= 0 && texts > e.fatalAfter {
				e.fail(errFatal)
				return errFatal
			}
		}
		return emit(ev)
	})
	fmt.Fprintf(os.Stderr, "generate %q ended: %v\n", firstWord(req.Prompt), err)
	return err
}

// ReleaseAdapter logs the path, for TestReleaseAdapter.
func (e *childEngine) ReleaseAdapter(ctx context.Context, path string) error {
	fmt.Fprintf(os.Stderr, "release adapter %q pid=%d\n", path, os.Getpid())
	return nil
}

func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

// syncBuffer is a bytes.Buffer safe for the client's stderr copier and the test together.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newClient returns a client for a test worker of the given behaviour, closed at cleanup;
// edits change its options.
func newClient(t *testing.T, model string, edits ...func(*Options)) (*Client, *syncBuffer) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	opts := Options{
		Command:       []string{exe},
		Env:           []string{childEnv + "=1"},
		ModelPath:     model,
		ContextLength: 64,
		Parallel:      2,
		Threads:       1,
		Log:           log,
		StartTimeout:  time.Minute,
	}
	for _, edit := range edits {
		edit(&opts)
	}
	c := NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return c, log
}

// started returns a client whose worker is running.
func started(t *testing.T, model string, edits ...func(*Options)) (*Client, *syncBuffer) {
	t.Helper()
	c, log := newClient(t, model, edits...)
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return c, log
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitWithin(t, 10*time.Second, what, cond)
}

func waitWithin(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// collect runs a generation and returns its events.
func collect(ctx context.Context, e llm.Engine, req *llm.Request) ([]llm.Event, error) {
	var events []llm.Event
	err := e.Generate(ctx, req, func(ev llm.Event) error {
		events = append(events, ev)
		return nil
	})
	return events, err
}

func textOf(events []llm.Event) string {
	var b strings.Builder
	for _, ev := range events {
		b.WriteString(ev.Text)
	}
	return b.String()
}
