package gguf_test

import (
	"path/filepath"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

func TestFIMTokens(t *testing.T) {
	cases := []struct {
		name   string
		build  func(w *gguftest.Writer)
		want   gguf.FIM
		wantOK bool
	}{
		{"explicit keys", func(w *gguftest.Writer) {
			w.AddStrings("tokenizer.ggml.tokens", []string{"a", "b", "c", "d"})
			w.AddUint32("tokenizer.ggml.fim_pre_token_id", 1)
			w.AddUint32("tokenizer.ggml.fim_suf_token_id", 2)
			w.AddUint32("tokenizer.ggml.fim_mid_token_id", 3)
		}, gguf.FIM{1, 2, 3}, true},
		{"older keys", func(w *gguftest.Writer) {
			w.AddStrings("tokenizer.ggml.tokens", []string{"a", "b", "c", "d"})
			w.AddUint32("tokenizer.ggml.prefix_token_id", 3)
			w.AddUint32("tokenizer.ggml.suffix_token_id", 2)
			w.AddUint32("tokenizer.ggml.middle_token_id", 1)
		}, gguf.FIM{3, 2, 1}, true},
		{"by text", func(w *gguftest.Writer) {
			w.AddStrings("tokenizer.ggml.tokens", []string{"x", "<|fim_middle|>", "<|fim_prefix|>", "<|fim_suffix|>"})
		}, gguf.FIM{2, 3, 1}, true},
		{"incomplete", func(w *gguftest.Writer) {
			w.AddStrings("tokenizer.ggml.tokens", []string{"x", "<|fim_prefix|>", "<|fim_suffix|>"})
		}, gguf.FIM{}, false},
		{"no vocabulary", func(w *gguftest.Writer) {}, gguf.FIM{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := gguftest.NewWriter()
			w.AddString("general.architecture", "llama")
			c.build(w)
			path := filepath.Join(t.TempDir(), "m.gguf")
			if err := w.WriteFile(path); err != nil {
				t.Fatal(err)
			}
			f, err := gguf.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := f.FIMTokens()
			if got != c.want || ok != c.wantOK {
				t.Fatalf("FIMTokens() = %+v, %v; want %+v, %v", got, ok, c.want, c.wantOK)
			}
		})
	}
}

func TestFIMTokensRealVocabularies(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "models")
	cases := []struct {
		file   string
		wantOK bool
		texts  [3]string
	}{
		{"ggml-vocab-deepseek-coder-6.7b-instruct.gguf", true, [3]string{"<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>"}},
		{"stories260K.gguf", false, [3]string{}},
	}
	for _, c := range cases {
		f, err := gguf.ReadFile(filepath.Join(dir, c.file))
		if err != nil {
			t.Skipf("shared models absent: %v", err)
		}
		fim, ok := f.FIMTokens()
		if ok != c.wantOK {
			t.Fatalf("%s: FIM ok=%v, want %v", c.file, ok, c.wantOK)
		}
		if !ok {
			continue
		}
		for i, id := range []int{fim.Prefix, fim.Suffix, fim.Middle} {
			if text, _ := f.TokenText(id); text != c.texts[i] {
				t.Errorf("%s: marker %d is %q, want %q", c.file, i, text, c.texts[i])
			}
		}
	}
}
