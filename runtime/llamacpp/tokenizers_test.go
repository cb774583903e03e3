package llamacpp

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

// The vocabularies and texts the tokenizer stack tests run on.

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
		if err := writeTinyBPE(path, "deepseek-coder"); err != nil {
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

// preTokenizers are the BPE pre-tokenizers of the pinned llama.cpp (llama-vocab.cpp), each
// a regex list; most run on std::regex, a few (gpt-2, llama3, ...) on hand-written code.
var preTokenizers = []string{"deepseek-coder", "deepseek-llm", "deepseek-v3", "falcon", "falcon3", "mpt", "starcoder",
	"gpt-2", "qwen2", "refact", "command-r", "stablelm2", "olmo", "dbrx", "poro-chat", "chatglm-bpe", "viking", "jais",
	"tekken", "smollm", "codeshell", "bloom", "exaone", "chameleon", "minerva-7b", "megrez", "gpt-4o", "superbpe",
	"trillion", "bailingmoe", "seed-coder", "hunyuan", "kimi-k2", "grok-2", "afmoe", "minimax-m2", "pixtral", "llama3"}

var (
	preVocabsOnce sync.Once
	preVocabs     []stackTokenizer
	preVocabsErr  error
)

// preTokenizerVocabs loads a written BPE vocabulary for each of preTokenizers.
func preTokenizerVocabs(t *testing.T) []stackTokenizer {
	t.Helper()
	preVocabsOnce.Do(func() {
		dir, err := os.MkdirTemp("", "llamacpp-pre-")
		if err != nil {
			preVocabsErr = err
			return
		}
		for _, pre := range preTokenizers {
			path := filepath.Join(dir, pre+".gguf")
			if err := writeTinyBPE(path, pre); err != nil {
				preVocabsErr = err
				return
			}
			e, err := Load(Options{ModelPath: path, VocabOnly: true})
			if err != nil {
				preVocabsErr = fmt.Errorf("pre-tokenizer %s: %w", pre, err)
				return
			}
			preVocabs = append(preVocabs, stackTokenizer{"BPE " + pre, e})
		}
	})
	if preVocabsErr != nil {
		t.Fatal(preVocabsErr)
	}
	return preVocabs
}

// writeTinyBPE writes a vocabulary-only byte-level BPE model with the pre-tokenizer named pre
// (DeepSeek-Coder's and most others are std::regex in llama.cpp): the 256 byte symbols and a
// few merges.
func writeTinyBPE(path, pre string) error {
	w := gguftest.NewWriter()
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
	w.AddString("tokenizer.ggml.pre", pre)
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
