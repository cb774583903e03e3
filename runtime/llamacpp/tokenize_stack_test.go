package llamacpp

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/worker"
)

// TestTokenizeStackPerByte measures the stack one tokenization touches per byte of text, for
// every tokenizer in ../shared/models and every BPE pre-tokenizer of the pinned llama.cpp (on
// a written vocabulary), and every kind of run, and checks stackPerByte has room for the worst
// twice over.
func TestTokenizeStackPerByte(t *testing.T) {
	tokenizers := slices.Concat(stackTokenizers(t), preTokenizerVocabs(t))
	worst, worstAt := 0.0, ""
	for _, tk := range tokenizers {
		for _, k := range runKinds {
			var used, bytes [2]int
			skip := false
			for i, n := range []int{1000, 5000} {
				text := k.of(n)
				bytes[i] = len(text)
				if checkCodepoints(text) != nil {
					skip = true // refused before llama.cpp sees it
					break
				}
				if _, err := tokenizeOnStack(context.Background(), tk.e.model, text, true, false, stackFor(len(text)), &used[i]); err != nil {
					t.Fatalf("%s, %s: %v", tk.name, k.name, err)
				}
			}
			if skip {
				continue
			}
			per := float64(used[1]-used[0]) / float64(bytes[1]-bytes[0])
			if per > worst {
				worst, worstAt = per, tk.name+", "+k.name
			}
			if per > 1 {
				t.Logf("%-45s %-13s %.1f B of stack per byte", tk.name, k.name, per)
			}
		}
	}
	t.Logf("worst: %.1f B of stack per byte (%s)", worst, worstAt)
	if 2*worst > stackPerByte {
		t.Errorf("the worst run (%s) takes %.1f bytes of stack per byte of text; stackPerByte (%d) is less than twice that", worstAt, worst, stackPerByte)
	}
}

// TestTokenizeBigStackEqualsPlain: the ids from the big-stack thread are exactly llama.cpp's
// own (llama.Model.Tokenize on the calling thread), for every tokenizer and kind of run at
// lengths the calling thread's 8 MiB stack survives, with and without special tokens.
func TestTokenizeBigStackEqualsPlain(t *testing.T) {
	for _, tk := range stackTokenizers(t) {
		for _, k := range runKinds {
			for _, n := range []int{1, 7, 1000, 12000} {
				text := k.of(n)
				if checkCodepoints(text) != nil {
					continue
				}
				for _, special := range []bool{false, true} {
					want, err := tk.e.model.Tokenize(text, special, special)
					if err != nil {
						t.Fatalf("%s, %d × %s: plain: %v", tk.name, n, k.name, err)
					}
					got, err := tokenizeOnStack(context.Background(), tk.e.model, text, special, special, stackFor(len(text)), nil)
					if err != nil || !slices.Equal(got, want) {
						t.Errorf("%s, %d × %s (special %v): big stack %d ids (%v), plain %d ids; want equal", tk.name, n, k.name, special, len(got), err, len(want))
					}
				}
			}
		}
	}
	for _, tk := range preTokenizerVocabs(t) {
		for _, k := range runKinds {
			for _, n := range []int{7, 1000} {
				text := k.of(n)
				if checkCodepoints(text) != nil {
					continue
				}
				want, _ := tk.e.model.Tokenize(text, true, true)
				got, err := tokenizeOnStack(context.Background(), tk.e.model, text, true, true, stackFor(len(text)), nil)
				if err != nil || !slices.Equal(got, want) {
					t.Errorf("%s, %d × %s: big stack %d ids (%v), plain %d ids; want equal", tk.name, n, k.name, len(got), err, len(want))
				}
			}
		}
	}
	// Text of every sort mixed, past the plain path's limit for a run, but in short runs.
	prose := strings.Repeat("Once upon a time, 中文 text!!! -- 12345\n\t  ", 2000)
	for _, tk := range stackTokenizers(t) {
		want, _ := tk.e.model.Tokenize(prose, true, true)
		got, err := tokenizeOnStack(context.Background(), tk.e.model, prose, true, true, stackFor(len(prose)), nil)
		if err != nil || !slices.Equal(got, want) || len(want) == 0 {
			t.Errorf("%s, %d bytes of prose: big stack %d ids (%v), plain %d ids; want equal", tk.name, len(prose), len(got), err, len(want))
		}
	}
}

// TestTokenizeLongRuns: runs of every kind at 32,000 characters and at the model's window, and
// the worst kinds at 1,000,000 characters, tokenize (ids of the vocabulary) or are refused with
// llm.ErrInvalidInput; none crashes the process.
func TestTokenizeLongRuns(t *testing.T) {
	ctx := context.Background()
	for _, tk := range stackTokenizers(t) {
		window := tk.e.Info().TrainContextLength
		for _, k := range runKinds {
			for _, n := range []int{32000, window, 1_000_000} {
				// A million characters takes seconds a run on std::regex: the worst kinds only.
				if n == 1_000_000 && (testing.Short() || !slices.Contains([]string{"!", "CJK", "random bytes"}, k.name)) {
					continue
				}
				text := k.of(n)
				ids, err := tk.e.Tokenize(ctx, text, true, true)
				switch {
				case errors.Is(err, llm.ErrInvalidInput):
					t.Logf("%s, %d × %s: refused: %.120v", tk.name, n, k.name, err)
				case err != nil:
					t.Errorf("%s, %d × %s: %v; want ids or llm.ErrInvalidInput", tk.name, n, k.name, err)
				case len(ids) == 0 && n > 0 && !strings.Contains(tk.name, "bert"):
					t.Errorf("%s, %d × %s: no ids", tk.name, n, k.name)
				}
				for _, id := range ids {
					if id < 0 || id >= tk.e.Info().VocabSize {
						t.Fatalf("%s, %d × %s: id %d outside the vocabulary", tk.name, n, k.name, id)
					}
				}
			}
		}
	}
	if _, err := stackTokenizers(t)[0].e.Tokenize(ctx, strings.Repeat("!", maxTokenizeBytes+1), false, false); !errors.Is(err, llm.ErrInvalidInput) {
		t.Errorf("Tokenize(%d bytes) = %v, want llm.ErrInvalidInput", maxTokenizeBytes+1, err)
	}
}

// TestTokenizeLongRunInWorker: 32,000 "!" through a real worker process on DeepSeek-Coder's
// BPE vocabulary (or the written one), the reply that killed the worker with SIGSEGV inside
// llama_tokenize: it tokenizes to the ids the same text tokenizes to in pieces llama.cpp
// splits at anyway, and the same worker answers afterwards.
func TestTokenizeLongRunInWorker(t *testing.T) {
	path := filepath.Join(sharedModels, "ggml-vocab-deepseek-coder-6.7b-instruct.gguf")
	if !fileExists(path) {
		path = ""
		for _, tk := range stackTokenizers(t) {
			if path == "" {
				path = tk.e.info.Path // the written BPE vocabulary comes first
			}
		}
	}
	c, log := startWorker(t, worker.Options{ModelPath: path, VocabOnly: true})
	pid := c.PID()
	ctx := context.Background()
	ids, err := c.Tokenize(ctx, strings.Repeat("!", 32000), false, false)
	if err != nil || c.PID() != pid {
		t.Fatalf("Tokenize(32,000 × !) = %d ids, %v; worker pid %d, now %d\nlog:\n%s", len(ids), err, pid, c.PID(), log)
	}
	// "\s?[!-/:-~...]+" matches the whole run, so it is one word to BPE, and BPE merges are
	// the same on every word of it: 32,000 is 125 words of 256 tokenized alone.
	part, err := c.Tokenize(ctx, strings.Repeat("!", 256), false, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 125*len(part) {
		t.Errorf("32,000 × ! = %d ids; 256 × ! = %d ids, want 125 times as many", len(ids), len(part))
	}
	if ids, err := c.Tokenize(ctx, "Hello world", true, true); err != nil || len(ids) == 0 || c.PID() != pid {
		t.Errorf("Tokenize afterwards = %v, %v (pid %d, was %d)", ids, err, c.PID(), pid)
	}
}

// TestTokenizePastLastCodepoint: bytes that llama.cpp's UTF-8 decoder reads as a code point
// past U+10FFFF (a lead byte F5-F7, or F4 with a high second byte) make it throw
// std::invalid_argument out of llama_tokenize, which aborts the process; Engine.Tokenize
// refuses them with llm.ErrInvalidInput, and other invalid UTF-8 (which llama.cpp replaces)
// still tokenizes. (The worker's socket carries text as JSON, which already replaces invalid
// UTF-8; this guards the engine itself.)
func TestTokenizePastLastCodepoint(t *testing.T) {
	ctx := context.Background()
	for _, tk := range stackTokenizers(t) {
		for _, text := range []string{"\xf7\xbf\xbf\xbf", "ok \xf4\x90\x80\x80 ok", strings.Repeat("a", 100) + "\xf5\x80\x80\x80"} {
			_, err := tk.e.Tokenize(ctx, text, true, false)
			if !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), "not valid UTF-8") {
				t.Errorf("%s: Tokenize(%q) = %v; want llm.ErrInvalidInput", tk.name, text, err)
			}
		}
		for _, text := range []string{"\xff\xfe", "\xf4\x8f\xbf\xbf", "a\x80b", "\xf0\x9f\x98"} {
			if _, err := tk.e.Tokenize(ctx, text, true, false); err != nil {
				t.Errorf("%s: Tokenize(%q) = %v; want ids", tk.name, text, err)
			}
		}
	}
}

// BenchmarkTokenizeShort is the cost of the tokenizer thread on a short text, against
// llama.Model.Tokenize on the calling thread.
func BenchmarkTokenizeShort(b *testing.B) {
	text := "Once upon a time, there was a little girl who liked to play outside."
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			_, _ = testEngine.model.Tokenize(text, true, true)
		}
	})
	b.Run("own thread", func(b *testing.B) {
		for b.Loop() {
			_, _ = tokenizeOnStack(context.Background(), testEngine.model, text, true, true, stackFor(len(text)), nil)
		}
	})
}

// TestTokenizeBounded: the text tokenized at once, all callers together, is at most
// maxTokenizeBytes (each byte can touch 320 bytes of stack: concurrent 4 MiB texts would each
// hold 1.3 GB); a call waits for room, and gives up when its context ends.
func TestTokenizeBounded(t *testing.T) {
	tk := stackTokenizers(t)[0]
	if err := tokenizing.Acquire(context.Background(), maxTokenizeBytes-10); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := tk.e.Tokenize(ctx, strings.Repeat("!", 100), false, false); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Tokenize with the budget spent = %v, want it to wait until its context ends", err)
	}
	if ids, err := tk.e.Tokenize(context.Background(), "short", false, false); err != nil || len(ids) == 0 {
		t.Errorf("Tokenize(5 bytes) within the budget left = %v, %v", ids, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := tk.e.Tokenize(context.Background(), strings.Repeat("!", 100), false, false)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	tokenizing.Release(maxTokenizeBytes - 10)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Tokenize once room came = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Tokenize still waits after the budget was released")
	}
}
