package llamacpp

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
)

// The tests share one engine: stories260K from ../shared/models when it is there, otherwise a
// random-weight model the tests write (as on a fresh clone; -tinymodel forces that).
var forceTiny = flag.Bool("tinymodel", false, "test with a written random-weight model even when ../shared/models has stories260K")

const (
	sharedModels = "../../../shared/models"
	testCtx      = 512
	testParallel = 4
)

var (
	testEngine    *Engine
	testModelPath string
)

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		os.Exit(runWorker(os.Args[1:])) // this process is a worker started by a test's Client
	}
	flag.Parse()
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	testModelPath = filepath.Join(sharedModels, "stories260K.gguf")
	if _, err := os.Stat(testModelPath); err != nil || *forceTiny {
		dir, err := os.MkdirTemp("", "llamacpp-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		testModelPath = filepath.Join(dir, "tiny.gguf")
		if err := gguftest.WriteTinyLlama(testModelPath, gguftest.TinyLlamaOptions{}); err != nil {
			fmt.Fprintln(os.Stderr, "write the test model:", err)
			return 1
		}
	}
	e, err := Load(Options{ModelPath: testModelPath, ContextLength: testCtx, Parallel: testParallel})
	if err != nil {
		fmt.Fprintln(os.Stderr, "load the test model:", err)
		return 1
	}
	testEngine = e
	defer e.Close()
	return m.Run()
}

func ptr[T any](v T) *T { return &v }

// greedy returns a temperature-0 request for prompt (with BOS).
func greedy(prompt string, maxTokens int) *llm.Request {
	return &llm.Request{Prompt: prompt, AddSpecial: true, MaxTokens: maxTokens, Sampling: llm.Sampling{Temperature: ptr(0.0)}}
}

// result is one generation as the caller saw it.
type result struct {
	events  []llm.Event
	text    string
	started llm.Started
	done    llm.Done
}

// generate runs req on e and checks the event stream's invariants: Started first, Done last,
// text in between, valid UTF-8, token counts that add up, and one lane throughout.
func generate(t *testing.T, e *Engine, req *llm.Request) (result, error) {
	t.Helper()
	var r result
	err := e.Generate(context.Background(), req, func(ev llm.Event) error {
		r.events = append(r.events, ev)
		return nil
	})
	if err != nil {
		return r, err
	}
	if err := checkEvents(r.events, e.Info().Parallel); err != nil {
		t.Errorf("prompt %.30q: %v", req.Prompt, err)
		return r, nil
	}
	r.started, r.done = *r.events[0].Started, *r.events[len(r.events)-1].Done
	var b strings.Builder
	for _, ev := range r.events {
		b.WriteString(ev.Text)
	}
	r.text = b.String()
	return r, nil
}

func mustGenerate(t *testing.T, e *Engine, req *llm.Request) result {
	t.Helper()
	r, err := generate(t, e, req)
	if err != nil {
		t.Fatalf("Generate(%.30q): %v", req.Prompt, err)
	}
	return r
}

// checkEvents is safe to call from any goroutine.
func checkEvents(events []llm.Event, parallel int) error {
	if len(events) < 2 || events[0].Started == nil || events[len(events)-1].Done == nil {
		return fmt.Errorf("events %+v: want Started first and Done last", events)
	}
	st, done := events[0].Started, events[len(events)-1].Done
	tokens := 0
	for i, ev := range events {
		if i > 0 && i < len(events)-1 && (ev.Started != nil || ev.Done != nil) {
			return fmt.Errorf("event %d of %d is Started or Done", i, len(events))
		}
		if !utf8.ValidString(ev.Text) {
			return fmt.Errorf("event %d text %q is not valid UTF-8", i, ev.Text)
		}
		tokens += ev.Tokens
	}
	switch {
	case tokens != done.Usage.CompletionTokens:
		return fmt.Errorf("events cover %d tokens, usage says %d completion tokens", tokens, done.Usage.CompletionTokens)
	case st.PromptTokens != done.Usage.PromptTokens || st.CachedTokens != done.Usage.CachedTokens:
		return fmt.Errorf("Started %+v disagrees with usage %+v", *st, done.Usage)
	case st.Lane != done.Lane || st.Lane < 0 || st.Lane >= parallel:
		return fmt.Errorf("lanes: started on %d, done on %d; want one lane in 0..%d", st.Lane, done.Lane, parallel-1)
	case st.CachedTokens < 0 || st.CachedTokens >= max(st.PromptTokens, 1):
		return fmt.Errorf("cached %d of %d prompt tokens", st.CachedTokens, st.PromptTokens)
	case done.FinishReason != llm.FinishStop && done.FinishReason != llm.FinishLength:
		return fmt.Errorf("finish reason %q", done.FinishReason)
	}
	return nil
}

func tokenize(t *testing.T, e *Engine, text string) []int {
	t.Helper()
	tokens, err := e.Tokenize(context.Background(), text, true, true)
	if err != nil {
		t.Fatalf("Tokenize(%.30q): %v", text, err)
	}
	return tokens
}

// textOfLength returns a text that tokenizes (with BOS) to exactly n tokens: it appends the
// first of a few short pieces that does not overshoot until the count is reached.
func textOfLength(t *testing.T, e *Engine, n int) string {
	t.Helper()
	text := "once"
	for len(tokenize(t, e, text)) < n {
		grew := false
		for _, piece := range []string{" once upon a time", " once", " a", ".", "!", " x"} {
			if len(tokenize(t, e, text+piece)) <= n {
				text, grew = text+piece, true
				break
			}
		}
		if !grew {
			t.Fatalf("no text of exactly %d tokens found (stuck at %d tokens)", n, len(tokenize(t, e, text)))
		}
	}
	if got := len(tokenize(t, e, text)); got != n {
		t.Fatalf("text of %d tokens, want %d", got, n)
	}
	return text
}
