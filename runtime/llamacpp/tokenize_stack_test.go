package llamacpp

import (
	"context"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/worker"
)

// stackTokenizer is one vocabulary the stack tests load (vocab only).
type stackTokenizer struct {
	name string
	e    *Engine
}

var (
	stackTokenizersOnce sync.Once
	stackTokenizersList []stackTokenizer
	stackTokenizersErr  error
)

// stackTokenizers loads every tokenizer in ../shared/models (skipped with a note when that
// folder is absent) and a byte-level BPE vocabulary with DeepSeek-Coder's std::regex
// pre-tokenizer that the test writes, so the regex path is covered on a fresh clone too.
func stackTokenizers(t *testing.T) []stackTokenizer {
	t.Helper()
	stackTokenizersOnce.Do(func() {
		dir, err := os.MkdirTemp("", "llamacpp-bpe-")
		if err != nil {
			stackTokenizersErr = err
			return
		}
		// Left for the OS: the engines use the file until the test binary exits.
		path := filepath.Join(dir, "bpe.gguf")
		if err := writeTinyBPE(path); err != nil {
			stackTokenizersErr = err
			return
		}
		paths := [][2]string{{"written deepseek-coder BPE", path}}
		for _, name := range []string{"ggml-vocab-deepseek-coder-6.7b-instruct.gguf", "ggml-vocab-llama-spm.gguf",
			"ggml-vocab-phi-3.gguf", "ggml-vocab-bert-bge.gguf", "llama-2-tiny-random.gguf", "stories260K.gguf"} {
			if p := filepath.Join(sharedModels, name); fileExists(p) {
				paths = append(paths, [2]string{name, p})
			}
		}
		for _, p := range paths {
			e, err := Load(Options{ModelPath: p[1], VocabOnly: true})
			if err != nil {
				stackTokenizersErr = err
				return
			}
			stackTokenizersList = append(stackTokenizersList, stackTokenizer{p[0], e})
		}
	})
	if stackTokenizersErr != nil {
		t.Fatal(stackTokenizersErr)
	}
	if len(stackTokenizersList) == 1 {
		t.Logf("%s is absent: only the written BPE vocabulary is tested", sharedModels)
	}
	return stackTokenizersList
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// runOf is n characters of one kind: the runs a pre-tokenizer's regex matches whole.
var runKinds = []struct {
	name string
	of   func(n int) string
}{
	{"letter", func(n int) string { return strings.Repeat("a", n) }},
	{"!", func(n int) string { return strings.Repeat("!", n) }},
	{".", func(n int) string { return strings.Repeat(".", n) }},
	{"-", func(n int) string { return strings.Repeat("-", n) }},
	{"space", func(n int) string { return strings.Repeat(" ", n) }},
	{"newline", func(n int) string { return strings.Repeat("\n", n) }},
	{"tab", func(n int) string { return strings.Repeat("\t", n) }},
	{"digit", func(n int) string { return strings.Repeat("7", n) }},
	{"CJK", func(n int) string { return strings.Repeat("中", n) }},
	{"space-!", func(n int) string { return strings.Repeat(" !", n/2) }},
	{"random text", func(n int) string {
		rng := rand.New(rand.NewSource(int64(n)))
		var b strings.Builder
		for b.Len() < n {
			if r := rune(rng.Intn(0x30000)); utf8.ValidRune(r) {
				b.WriteRune(r)
			}
		}
		return b.String()
	}},
	{"random bytes", func(n int) string {
		b := make([]byte, n)
		rand.New(rand.NewSource(int64(n))).Read(b)
		return string(b)
	}},
}

// TestTokenizeStackPerByte measures the stack one tokenization touches per byte of text, for
// every tokenizer and kind of run, and checks stackPerByte has room for it four times over.
func TestTokenizeStackPerByte(t *testing.T) {
	worst := 0.0
	for _, tk := range stackTokenizers(t) {
		for _, k := range runKinds {
			var used [2]int
			var bytes [2]int
			for i, n := range []int{4000, 20000} {
				text := k.of(n)
				bytes[i] = len(text)
				if err := checkCodepoints(text); err != nil {
					t.Logf("%s, %s: %v", tk.name, k.name, err)
					continue
				}
				if _, err := tokenizeOnStack(tk.e.model, text, true, false, stackFor(len(text)), &used[i]); err != nil {
					t.Fatalf("%s, %s: %v", tk.name, k.name, err)
				}
			}
			per := float64(used[1]-used[0]) / float64(bytes[1]-bytes[0])
			t.Logf("%-45s %-13s %7d B at %6d bytes, %8d B at %6d bytes: %.1f B/byte", tk.name, k.name, used[0], bytes[0], used[1], bytes[1], per)
			worst = max(worst, per)
		}
	}
	if 4*worst > stackPerByte {
		t.Errorf("the worst run takes %.1f bytes of stack per byte of text; stackPerByte (%d) is less than four times that", worst, stackPerByte)
	}
}

// writeTinyBPE writes a vocabulary-only byte-level BPE model whose pre-tokenizer is
// DeepSeek-Coder's (std::regex in llama.cpp): the 256 byte symbols and a few merges.
func writeTinyBPE(path string) error {
	w := gguf.NewWriter()
	w.AddString("general.architecture", "llama")
	w.AddUint32("llama.context_length", 2048)
	w.AddUint32("llama.embedding_length", 64)
	w.AddUint32("llama.block_count", 1)
	w.AddUint32("llama.feed_forward_length", 128)
	w.AddUint32("llama.attention.head_count", 4)
	w.AddFloat32("llama.attention.layer_norm_rms_epsilon", 1e-5)
	tokens := []string{"<s>", "</s>"}
	types := []int32{3, 3}
	for _, r := range byteSymbols() {
		tokens = append(tokens, string(r))
		types = append(types, 1)
	}
	var merges []string
	for _, pair := range [][2]string{{"!", "!"}, {"!!", "!!"}, {"a", "a"}, {"aa", "aa"}, {"Ġ", "!"}, {"Ċ", "Ċ"}, {"Ġ", "Ġ"}, {"ĠĠ", "ĠĠ"}} {
		merges = append(merges, pair[0]+" "+pair[1])
		if !slices.Contains(tokens, pair[0]+pair[1]) {
			tokens = append(tokens, pair[0]+pair[1])
			types = append(types, 1)
		}
	}
	w.AddString("tokenizer.ggml.model", "gpt2")
	w.AddString("tokenizer.ggml.pre", "deepseek-coder")
	w.AddStrings("tokenizer.ggml.tokens", tokens)
	w.AddInt32s("tokenizer.ggml.token_type", types)
	w.AddStrings("tokenizer.ggml.merges", merges)
	w.AddUint32("tokenizer.ggml.bos_token_id", 0)
	w.AddUint32("tokenizer.ggml.eos_token_id", 1)
	w.AddBool("tokenizer.ggml.add_bos_token", true)
	return w.WriteFile(path)
}

// byteSymbols is GPT-2's byte-to-character map: printable bytes stand for themselves, the
// others for characters from U+0100 up, in byte order.
func byteSymbols() []rune {
	out := make([]rune, 256)
	next := rune(256)
	for b := range 256 {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE {
			out[b] = rune(b)
		} else {
			out[b] = next
			next++
		}
	}
	return out
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
					got, err := tokenizeOnStack(tk.e.model, text, special, special, stackFor(len(text)), nil)
					if err != nil || !slices.Equal(got, want) {
						t.Errorf("%s, %d × %s (special %v): big stack %d ids (%v), plain %d ids; want equal", tk.name, n, k.name, special, len(got), err, len(want))
					}
				}
			}
		}
	}
	// Text of every sort mixed, past the plain path's limit for a run, but in short runs.
	prose := strings.Repeat("Once upon a time, 中文 text!!! -- 12345\n\t  ", 2000)
	for _, tk := range stackTokenizers(t) {
		want, _ := tk.e.model.Tokenize(prose, true, true)
		got, err := tokenizeOnStack(tk.e.model, prose, true, true, stackFor(len(prose)), nil)
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
