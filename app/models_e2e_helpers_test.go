package app

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

// writeNaNModel writes a tiny llama whose output matrix is all NaN: every logit is NaN.
func writeNaNModel(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nan.gguf")
	if err := gguftest.WriteTinyLlama(path, gguftest.TinyLlamaOptions{Name: "nan-llama"}); err != nil {
		t.Fatal(err)
	}
	if err := gguftest.FillF32(path, "output.weight", float32(math.NaN())); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeBPELlama writes a tiny random-weight llama whose tokenizer is byte-level BPE with
// DeepSeek-Coder's pre-tokenizer (std::regex in llama.cpp, the one whose recursion overflowed
// the stack on long runs): the 256 byte symbols and merges of "!" up to 16 in a row.
func writeBPELlama(t *testing.T) string {
	t.Helper()
	tokens := []string{"<s>", "</s>"}
	types := []int32{3, 3}
	next := rune(256)
	for b := range 256 {
		r := rune(b)
		if !(b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE) {
			r, next = next, next+1 // GPT-2's byte-to-character map
		}
		tokens, types = append(tokens, string(r)), append(types, 1)
	}
	var merges []string
	for _, n := range []int{1, 2, 4, 8} {
		run := strings.Repeat("!", n)
		merges, tokens, types = append(merges, run+" "+run), append(tokens, run+run), append(types, 1)
	}
	return writeTinyWithTokenizer(t, "bpe-llama", len(tokens), func(w *gguftest.Writer) {
		w.AddString("tokenizer.ggml.model", "gpt2")
		w.AddString("tokenizer.ggml.pre", "deepseek-coder")
		w.AddStrings("tokenizer.ggml.tokens", tokens)
		w.AddInt32s("tokenizer.ggml.token_type", types)
		w.AddStrings("tokenizer.ggml.merges", merges)
		w.AddUint32("tokenizer.ggml.bos_token_id", 0)
		w.AddUint32("tokenizer.ggml.eos_token_id", 1)
		w.AddBool("tokenizer.ggml.add_bos_token", true)
	})
}

// writeLlamaWithVocab writes a tiny random-weight llama that carries the whole tokenizer
// (tokenizer.* metadata: vocabulary, merges, pre-tokenizer, chat template) of the GGUF at
// vocabPath, which may be a vocabulary-only file: a real tokenizer on a model that generates.
func writeLlamaWithVocab(t *testing.T, vocabPath string) string {
	t.Helper()
	v, err := gguf.ReadFile(vocabPath)
	if err != nil {
		t.Fatal(err)
	}
	tokens, _ := v.Strings("tokenizer.ggml.tokens")
	name := strings.TrimSuffix(filepath.Base(vocabPath), ".gguf")
	return writeTinyWithTokenizer(t, name, len(tokens), func(w *gguftest.Writer) {
		for _, k := range v.Keys {
			if strings.HasPrefix(k, "tokenizer.") {
				w.AddValue(k, v.KV[k])
			}
		}
	})
}

// writeTinyWithTokenizer writes a tiny random-weight llama of vocab tokens whose tokenizer
// metadata addTokenizer writes.
func writeTinyWithTokenizer(t *testing.T, name string, vocab int, addTokenizer func(*gguftest.Writer)) string {
	t.Helper()
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.gguf")
	if err := gguftest.WriteTinyLlama(plain, gguftest.TinyLlamaOptions{Vocab: vocab, Name: name}); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	w := gguftest.NewWriter()
	for _, k := range f.Keys {
		if !strings.HasPrefix(k, "tokenizer.") {
			w.AddValue(k, f.KV[k])
		}
	}
	addTokenizer(w)
	data, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	for _, ti := range f.Tensors {
		at := f.DataOffset + int64(ti.Offset)
		w.AddTensor(ti.Name, ti.Type, ti.Dims, data[at:at+ti.Size])
	}
	path := filepath.Join(dir, name+".gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}
