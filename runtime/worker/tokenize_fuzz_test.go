package worker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
)

// maxFuzzText bounds the text one FuzzTokenize input tokenizes: long enough for runs of one
// character far past any token, short enough for hundreds of inputs a minute.
const maxFuzzText = 256 << 10

// tokenizeWorker starts the worker FuzzTokenize drives: `superfluid worker` from the binary
// SUPERFLUID_WORKER_BIN names (make fuzz builds it and sets it), loading the real llama.cpp
// on llama-2-tiny-random (a real 32,000-token Llama 2 vocabulary) or stories260K from
// ../shared/models, or on a tiny model the test writes. Without the variable the test
// binary's fake worker stands in, which checks the socket protocol only: the test says so.
func tokenizeWorker(f *testing.F) *Client {
	opts := Options{ContextLength: 256, Parallel: 1, Threads: 1, StartTimeout: time.Minute, Log: &syncBuffer{}}
	if bin := os.Getenv("SUPERFLUID_WORKER_BIN"); bin != "" {
		opts.Command = []string{bin, "worker"}
		for _, name := range []string{"llama-2-tiny-random.gguf", "stories260K.gguf"} {
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
	} else {
		f.Log("SUPERFLUID_WORKER_BIN is not set: tokenizing with the fake worker (make fuzz sets it to bin/superfluid)")
		exe, err := os.Executable()
		if err != nil {
			f.Fatal(err)
		}
		opts.Command, opts.Env, opts.ModelPath = []string{exe}, []string{childEnv + "=1"}, "ok"
	}
	c := NewClient(opts)
	f.Cleanup(func() { c.Close() })
	if err := c.Start(context.Background()); err != nil {
		f.Fatalf("start the worker: %v\n%s", err, opts.Log)
	}
	return c
}

// FuzzTokenize tokenizes any text, and long runs of it, through a worker process: every text
// tokenizes into ids of the vocabulary or is refused with llm.ErrInvalidInput (a 400), and the
// worker survives it (the same process answers before and after).
func FuzzTokenize(f *testing.F) {
	c := tokenizeWorker(f)
	for _, s := range []string{"Once upon a time", "", " ", "\n\n\t", "<s>", "</s><s>[INST]", "<|im_start|>user", "café € 😀 中文",
		"\x00", "\ufffd", "\u200b\u200d", "a", "ab", "👩‍👩‍👧‍👦", "\U0010FFFF", "=", "   x   ", "0123456789"} {
		f.Add(s, uint16(0), true, true)
		f.Add(s, uint16(4096), false, false)
	}
	f.Add("a", uint16(65535), true, false)
	f.Add(" ", uint16(65535), false, true)
	f.Add("中", uint16(40000), true, true)
	f.Add("\xff\xfe", uint16(3), true, true)
	f.Fuzz(func(t *testing.T, text string, repeat uint16, addSpecial, parseSpecial bool) {
		if n := len(text) * (1 + int(repeat)); n > maxFuzzText && len(text) > 0 {
			repeat = uint16(maxFuzzText/len(text) - 1)
		}
		text = strings.Repeat(text, 1+int(repeat))
		pid := c.PID()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		ids, err := c.Tokenize(ctx, text, addSpecial, parseSpecial)
		if after := c.PID(); after != pid || pid == 0 {
			t.Fatalf("tokenizing %d bytes (%q...): the worker died (pid %d, now %d): %v", len(text), clipText(text, 40), pid, after, err)
		}
		switch {
		case err != nil && !errors.Is(err, llm.ErrInvalidInput):
			t.Fatalf("tokenizing %d bytes (%q...): %v, want ids or llm.ErrInvalidInput", len(text), clipText(text, 40), err)
		case err != nil:
			return
		}
		vocab := c.Info().VocabSize
		for _, id := range ids {
			if id < 0 || vocab > 0 && id >= vocab {
				t.Fatalf("tokenizing %q...: id %d outside the vocabulary of %d", clipText(text, 40), id, vocab)
			}
		}
	})
}

// clipText shortens s to n bytes for a failure message.
func clipText(s string, n int) string { return s[:min(n, len(s))] }
