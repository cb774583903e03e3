package gguftest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf"
)

func TestWriteTinyLlama(t *testing.T) {
	cases := []struct {
		name string
		opts TinyLlamaOptions
		// expected derived shapes
		embd, vocab, layers, kvdim, ff uint64
		matrixType                     uint32
		fileType                       uint64
	}{
		{"defaults", TinyLlamaOptions{}, 64, 512, 2, 64, 128, gguf.TypeF32, 0},
		{"gqa", TinyLlamaOptions{Embd: 32, Heads: 4, KVHeads: 2, Layers: 1, FF: 48, Vocab: 300, ChatTemplate: "{{ messages }}"},
			32, 300, 1, 16, 48, gguf.TypeF32, 0},
		{"q8", TinyLlamaOptions{Q8: true, Embd: 64, FF: 96, Seed: 9}, 64, 512, 2, 64, 96, gguf.TypeQ8_0, 7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tiny.gguf")
			if err := WriteTinyLlama(path, c.opts); err != nil {
				t.Fatal(err)
			}
			f, err := gguf.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			u := func(key string) uint64 {
				v, ok := f.Uint(key)
				if !ok {
					t.Errorf("missing %s", key)
				}
				return v
			}
			if f.Architecture() != "llama" || f.ContextLength() != 2048 || u("llama.embedding_length") != c.embd ||
				u("llama.block_count") != c.layers || u("llama.feed_forward_length") != c.ff ||
				u("general.file_type") != c.fileType {
				t.Errorf("metadata %v", f.KV)
			}
			if eps, ok := f.Float("llama.attention.layer_norm_rms_epsilon"); !ok || eps <= 0 {
				t.Errorf("rms epsilon %v %v", eps, ok)
			}
			if model, _ := f.String("tokenizer.ggml.model"); model != "llama" {
				t.Errorf("tokenizer model %q", model)
			}
			if add, ok := f.Bool("tokenizer.ggml.add_bos_token"); !add || !ok {
				t.Error("add_bos_token not true")
			}
			if f.ChatTemplate() != c.opts.ChatTemplate {
				t.Errorf("chat template %q", f.ChatTemplate())
			}
			tokens, _ := f.Strings("tokenizer.ggml.tokens")
			scores, _ := f.Value("tokenizer.ggml.scores")
			types, _ := f.Value("tokenizer.ggml.token_type")
			if uint64(len(tokens)) != c.vocab || uint64(scores.Len()) != c.vocab || uint64(types.Len()) != c.vocab {
				t.Errorf("vocab %d, scores %d, types %d; want %d", len(tokens), scores.Len(), types.Len(), c.vocab)
			}
			for name, want := range map[string]string{"bos": "<s>", "eos": "</s>", "unknown": "<unk>"} {
				id, ok := f.SpecialToken(name)
				if tok, _ := f.TokenText(id); !ok || tok != want {
					t.Errorf("%s token %d %q, want %q", name, id, tok, want)
				}
			}
			if tok, _ := f.TokenText(firstByteToken + 0x0A); tok != "<0x0A>" {
				t.Errorf("byte token 0x0A is %q", tok)
			}

			want := map[string][]uint64{
				"token_embd.weight":  {c.embd, c.vocab},
				"output_norm.weight": {c.embd},
				"output.weight":      {c.embd, c.vocab},
			}
			for i := range c.layers {
				p := fmt.Sprintf("blk.%d.", i)
				for name, dims := range map[string][]uint64{
					"attn_norm": {c.embd}, "attn_q": {c.embd, c.embd}, "attn_k": {c.embd, c.kvdim},
					"attn_v": {c.embd, c.kvdim}, "attn_output": {c.embd, c.embd}, "ffn_norm": {c.embd},
					"ffn_gate": {c.embd, c.ff}, "ffn_down": {c.ff, c.embd}, "ffn_up": {c.embd, c.ff},
				} {
					want[p+name+".weight"] = dims
				}
			}
			if len(f.Tensors) != len(want) {
				t.Errorf("%d tensors, want %d", len(f.Tensors), len(want))
			}
			for name, dims := range want {
				ti, ok := f.Tensor(name)
				if !ok || !reflect.DeepEqual(ti.Dims, dims) {
					t.Errorf("tensor %s: %v, want dims %v", name, ti.Dims, dims)
					continue
				}
				wantType := c.matrixType
				if len(dims) == 1 {
					wantType = gguf.TypeF32
				}
				if ti.Type != wantType {
					t.Errorf("tensor %s is %s, want %s", name, gguf.TypeName(ti.Type), gguf.TypeName(wantType))
				}
			}
		})
	}
}

func TestTinyLlamaWeights(t *testing.T) {
	write := func(o TinyLlamaOptions) []byte {
		w, err := NewTinyLlama(o)
		if err != nil {
			t.Fatal(err)
		}
		return writeBytes(t, w)
	}
	a, b, c := write(TinyLlamaOptions{Seed: 1}), write(TinyLlamaOptions{Seed: 1}), write(TinyLlamaOptions{Seed: 2})
	if !bytes.Equal(a, b) {
		t.Error("same seed, different files")
	}
	if bytes.Equal(a, c) {
		t.Error("different seeds, same file")
	}
	f, err := readBytes(a)
	if err != nil {
		t.Fatal(err)
	}
	stats := func(name string) (mean, std float64) {
		ti, _ := f.Tensor(name)
		data := a[f.DataOffset+int64(ti.Offset):][:ti.Size]
		n := float64(len(data) / 4)
		var sum, sq float64
		for i := 0; i < len(data); i += 4 {
			x := float64(math.Float32frombits(binary.LittleEndian.Uint32(data[i:])))
			sum += x
			sq += x * x
		}
		mean = sum / n
		return mean, math.Sqrt(sq/n - mean*mean)
	}
	if mean, std := stats("blk.0.ffn_up.weight"); math.Abs(mean) > 0.002 || math.Abs(std-0.02) > 0.002 {
		t.Errorf("weights mean %g std %g, want about 0 and 0.02", mean, std)
	}
	if mean, std := stats("output_norm.weight"); mean != 1 || std != 0 {
		t.Errorf("norm mean %g std %g, want 1 and 0", mean, std)
	}
}

func TestTinyLlamaOptionErrors(t *testing.T) {
	for _, o := range []TinyLlamaOptions{
		{Vocab: 100},
		{Embd: 30, Heads: 4},
		{Heads: 4, KVHeads: 3},
		{Heads: 2, KVHeads: 4},
		{Q8: true, Embd: 48},
		{Q8: true, FF: 100},
		{Layers: -1},
	} {
		if _, err := NewTinyLlama(o); err == nil {
			t.Errorf("%+v: no error", o)
		}
		if err := WriteTinyLlama(filepath.Join(t.TempDir(), "x.gguf"), o); err == nil {
			t.Errorf("%+v: WriteTinyLlama: no error", o)
		}
	}
}

func TestTinyVocab(t *testing.T) {
	for _, n := range []int{260, 512, 32000} {
		tokens, scores, types := tinyVocab(n)
		if len(tokens) != n || len(scores) != n || len(types) != n {
			t.Fatalf("tinyVocab(%d): %d tokens", n, len(tokens))
		}
		seen := map[string]bool{}
		for i, tok := range tokens {
			if seen[tok] {
				t.Fatalf("tinyVocab(%d): token %q repeated", n, tok)
			}
			seen[tok] = true
			if i >= firstPiece && (types[i] != 1 || scores[i] >= 0) {
				t.Fatalf("tinyVocab(%d): piece %d %q type %d score %g", n, i, tok, types[i], scores[i])
			}
		}
		if n >= 512 && (!seen["▁hello"] || !seen["▁world"] || !seen["▁the"]) {
			t.Errorf("tinyVocab(%d) lacks common words", n)
		}
	}
}

// TestWriteChunks checks that the parallel chunk writer keeps order and stops on errors.
func TestWriteChunks(t *testing.T) {
	gen := func(i int, buf []byte) []byte {
		for j := range buf {
			buf[j] = byte(i)
		}
		return buf[:1+i%3]
	}
	var got bytes.Buffer
	if err := writeChunks(&got, 50, 4, gen); err != nil {
		t.Fatal(err)
	}
	var want []byte
	for i := range 50 {
		want = append(want, bytes.Repeat([]byte{byte(i)}, 1+i%3)...)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("chunks out of order:\n%v\n%v", got.Bytes(), want)
	}
	boom := errors.New("disk full")
	if err := writeChunks(&failAfter{n: 10, err: boom}, 50, 4, gen); !errors.Is(err, boom) {
		t.Errorf("error %v, want %v", err, boom)
	}
}

type failAfter struct {
	n   int
	err error
}

func (f *failAfter) Write(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, f.err
	}
	f.n--
	return len(p), nil
}

// BenchmarkTinyLlamaBenchmarkShape measures writing a TinyLlama-1.1B-shaped model, the
// size the engine benchmarks use (1.2 GB as Q8_0, 4.4 GB as F32), to io.Discard.
func BenchmarkTinyLlamaBenchmarkShape(b *testing.B) {
	for _, q8 := range []bool{true, false} {
		b.Run(fmt.Sprintf("q8=%v", q8), func(b *testing.B) {
			opts := TinyLlamaOptions{Q8: q8, Embd: 2048, Layers: 22, Heads: 32, KVHeads: 4, FF: 5632, Vocab: 32000}
			for b.Loop() {
				w, err := NewTinyLlama(opts)
				if err != nil {
					b.Fatal(err)
				}
				n, err := w.WriteTo(io.Discard)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(n)
			}
		})
	}
}
