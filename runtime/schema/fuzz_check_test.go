package schema_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/schema"
	"github.com/superfluid/superfluid/runtime/worker"
)

// compileTimeout bounds one accepted schema's trip through the worker: llama.cpp's converter
// and grammar compile, then one token. Far more than any real schema takes; a schema Check
// accepts that takes longer would hold a lane that long.
const compileTimeout = 10 * time.Second

// grammarWorker starts the worker FuzzCheck compiles accepted schemas in: `superfluid worker`
// from the binary SUPERFLUID_WORKER_BIN names (make fuzz builds it and sets it), on
// stories260K or llama-2-tiny-random from ../shared/models, or on a tiny model the test writes.
// Without the variable it returns nil and FuzzCheck checks only the pure-Go part (the test
// says so). The worker is a process: this test links no llama.cpp (app/imports_weak16_test.go).
func grammarWorker(f *testing.F) (*worker.Client, *lockedBuffer) {
	bin := os.Getenv("SUPERFLUID_WORKER_BIN")
	if bin == "" {
		f.Log("SUPERFLUID_WORKER_BIN is not set: accepted schemas go through the pure-Go part only (make fuzz sets it to bin/superfluid)")
		return nil, nil
	}
	log := &lockedBuffer{}
	opts := worker.Options{Command: []string{bin, "worker"}, ContextLength: 256, Parallel: 1, Threads: 1,
		StartTimeout: time.Minute, Log: log}
	for _, name := range []string{"stories260K.gguf", "llama-2-tiny-random.gguf"} {
		if p := filepath.Join("..", "..", "..", "shared", "models", name); opts.ModelPath == "" {
			if _, err := os.Stat(p); err == nil {
				opts.ModelPath = p
			}
		}
	}
	if opts.ModelPath == "" {
		opts.ModelPath = filepath.Join(f.TempDir(), "tiny.gguf")
		if err := gguftest.WriteTinyLlama(opts.ModelPath, gguftest.TinyLlamaOptions{}); err != nil {
			f.Fatal(err)
		}
	}
	c := worker.NewClient(opts)
	f.Cleanup(func() { c.Close() })
	if err := c.Start(context.Background()); err != nil {
		f.Fatalf("start the worker: %v\n%s", err, log)
	}
	return c, log
}

// FuzzCheck: Check never panics, every refusal is an *Error naming a path, and every schema it
// accepts compiles: the pure-Go part (Grammar: the schema the grammar engine gets, itself
// accepted by Check) always, and with SUPERFLUID_WORKER_BIN set llama.cpp's converter and
// grammar compile in a real worker, which must neither crash (the same process answers after)
// nor take past compileTimeout; a clean refusal there (llm.ErrInvalidInput, a 400) is allowed.
func FuzzCheck(f *testing.F) {
	w, log := grammarWorker(f)
	for _, s := range []string{
		`{"type":"object","properties":{"child":{"$ref":"#"}}}`,
		`{"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/b"}]},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`,
		`{"type":"string","pattern":"^(a|b*)+[x\\]]{2,3}$"}`,
		`{"type":"array","items":[{},{"$ref":"#/items/0"}],"minItems":1,"maxItems":2}`,
		`[[{"a":1}]]`,
		`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0}},"required":["name"]}`,
		`{"enum":["a",1,null,{"b":[true]}]}`,
		`{"type":"array","items":{"type":"string","minLength":3,"maxLength":5},"minItems":2000}`,
		`{"type":"string","format":"date-time"}`,
		`{"oneOf":[{"type":"number","exclusiveMinimum":1.5},{"const":"x"}]}`,
		`{"type":"object","additionalProperties":{"type":"boolean"},"minProperties":1}`,
		`{}`, `true`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		err := schema.Check(raw)
		var e *schema.Error
		if err != nil {
			if !errors.As(err, &e) || !strings.HasPrefix(e.Path, "#") {
				t.Fatalf("Check(%q) = %v, want an *Error with a path", raw, err)
			}
			return
		}
		g, _, err := schema.Grammar(raw)
		if err != nil {
			t.Fatalf("Check accepts %q but Grammar refuses it: %v", raw, err)
		}
		if err := schema.Check(g); err != nil {
			t.Fatalf("the schema the grammar gets for %q, %s, is refused by Check: %v", raw, g, err)
		}
		if w != nil {
			compileInWorker(t, w, log, raw, g)
		}
	})
}

// compileInWorker has the worker compile the grammar of g (the grammar form of raw) and
// generate one token under it, as a request with that response format does.
func compileInWorker(t *testing.T, w *worker.Client, log *lockedBuffer, raw, g []byte) {
	pid := w.PID()
	ctx, cancel := context.WithTimeout(context.Background(), compileTimeout)
	defer cancel()
	req := &llm.Request{Prompt: "{", MaxTokens: 1, Format: llm.FormatSchema, Schema: g,
		CompactJSON: len(raw)%2 == 1} // the tool-call grammar's compact form, on half the inputs
	start := time.Now()
	err := w.Generate(ctx, req, func(llm.Event) error { return nil })
	took := time.Since(start)
	if after := w.PID(); after != pid || pid == 0 {
		t.Fatalf("compiling the grammar of %q: the worker died (pid %d, now %d): %v\n%s", clip(raw), pid, after, err, log.tail())
	}
	switch {
	case ctx.Err() != nil:
		t.Fatalf("compiling the grammar of %q took over %s (%s): %v", clip(raw), compileTimeout, took, err)
	case err != nil && !errors.Is(err, llm.ErrInvalidInput):
		t.Fatalf("compiling the grammar of %q: %v, want it compiled or llm.ErrInvalidInput\n%s", clip(raw), err, log.tail())
	}
}

func clip(b []byte) string { return string(b[:min(len(b), 200)]) }

// lockedBuffer is the worker's log, written by the client's goroutine and read by the test.
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

// tail is the end of the log, for a failure message.
func (l *lockedBuffer) tail() string {
	s := l.String()
	return s[max(0, len(s)-4000):]
}
