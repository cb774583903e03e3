package gguf_test

import (
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

// maxPad bounds the zeros FuzzRead may append to an input: enough to stand for the tensor data
// of the small real models, small enough that an accepted metadata array stays cheap.
const maxPad = 16 << 20

// zeroPadded is an io.ReaderAt over b followed by pad zero bytes: a header-only seed reads as the
// whole file without putting megabytes of weights into the corpus.
type zeroPadded struct {
	b   []byte
	pad int64
}

func (z zeroPadded) ReadAt(p []byte, off int64) (int, error) {
	size := int64(len(z.b)) + z.pad
	if off >= size {
		return 0, io.EOF
	}
	n := 0
	if off < int64(len(z.b)) {
		n = copy(p, z.b[off:])
	}
	for n < len(p) && off+int64(n) < size {
		p[n] = 0
		n++
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// sharedModels lists the real llama.cpp files in ../shared/models (none when it is absent).
func sharedModels() []string {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "models", "*.gguf"))
	return paths
}

// shrink rewrites a real file with every key and tensor kept but each array cut to 32
// elements, and returns its bytes up to the tensor data with the data's length: a seed the
// fuzzer can mutate quickly (the vocabularies make the real headers megabytes long).
func shrink(tb testing.TB, f *gguf.File) (head []byte, pad int64) {
	w := gguftest.NewWriter()
	for _, k := range f.Keys {
		v := f.KV[k]
		if v.IsArray() && v.Len() > 32 {
			v = gguf.UntypedValue(reflect.ValueOf(v.Raw()).Slice(0, 32).Interface())
		}
		w.AddValue(k, v)
	}
	for _, ti := range f.Tensors {
		w.AddTensorFunc(ti.Name, ti.Type, ti.Dims, func(out io.Writer) error {
			_, err := out.Write(make([]byte, ti.Size))
			return err
		})
	}
	b := writeBytes(tb, w)
	small, err := readBytes(b)
	if err != nil {
		tb.Fatalf("shrunk copy: %v", err)
	}
	n := min(small.DataOffset, int64(len(b)))
	return b[:n], int64(len(b)) - n
}

// flip returns b with 1 to 4 bits flipped at random.
func flip(rng *rand.Rand, b []byte) []byte {
	out := append([]byte(nil), b...)
	for range 1 + rng.IntN(4) {
		out[rng.IntN(len(out))] ^= 1 << rng.IntN(8)
	}
	return out
}

// fuzzSeeds returns FuzzRead's seeds beyond the committed corpus: a file of every value type and
// a tiny model from the package's own writer, and for each real file in ../shared/models (when
// present) a shrunk copy (see shrink), whole, cut short and with bits flipped. The real files
// themselves, cut and flipped, are TestSharedModelsMangled's.
func fuzzSeeds(tb testing.TB) (seeds [][]byte, pads []uint32) {
	add := func(b []byte, pad int64) {
		seeds, pads = append(seeds, b), append(pads, uint32(min(pad, maxPad)))
	}
	w := gguftest.NewWriter()
	for _, e := range everyValue {
		w.Add(e.key, e.v)
	}
	w.AddTensorF32("t", []uint64{2, 2}, []float32{1, 2, 3, 4})
	w.AddTensor("q", gguf.TypeQ8_0, []uint64{32}, make([]byte, 34))
	add(writeBytes(tb, w), 0)
	tiny, err := gguftest.NewTinyLlama(gguftest.TinyLlamaOptions{Vocab: 260, Embd: 8, Heads: 2, KVHeads: 1, FF: 8, Layers: 1})
	if err != nil {
		tb.Fatal(err)
	}
	add(writeBytes(tb, tiny), 0)
	add(new(raw).header(1, 1).kvU32("general.alignment", 64).tensor("t", gguf.TypeF32, 0, 4).data(16).Bytes(), 0)
	add([]byte("GGUF"), 0)
	add([]byte("not a model"), 0)

	rng := rand.New(rand.NewPCG(16, 1))
	for _, p := range sharedModels() {
		f, err := gguf.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		head, pad := shrink(tb, f)
		add(head, pad)
		if pad > 0 {
			add(head, pad-1) // one byte short
		}
		for _, cut := range []int{24, 100, len(head) / 2} {
			add(head[:min(cut, len(head))], 0)
		}
		for range 6 {
			add(flip(rng, head), pad)
		}
	}
	return seeds, pads
}

// FuzzRead feeds arbitrary bytes, followed by up to maxPad zero bytes, to Read: it must never
// panic, every refusal must wrap one of the package's sentinels, and what it accepts must hold
// together.
func FuzzRead(f *testing.F) {
	seeds, pads := fuzzSeeds(f)
	for i := range seeds {
		f.Add(seeds[i], pads[i])
	}
	f.Fuzz(func(t *testing.T, b []byte, pad uint32) {
		size := int64(len(b)) + int64(pad%maxPad)
		file, err := gguf.Read(zeroPadded{b, size - int64(len(b))}, size)
		if err != nil {
			if !errors.Is(err, gguf.ErrNotGGUF) && !errors.Is(err, gguf.ErrTruncated) && !errors.Is(err, gguf.ErrInvalid) {
				t.Fatalf("error %v wraps none of ErrNotGGUF, ErrTruncated, ErrInvalid", err)
			}
			return
		}
		if len(file.Keys) != len(file.KV) || len(file.Tensors) != gguf.IndexedTensors(file) {
			t.Fatalf("%d keys, %d values; %d tensors, %d indexed", len(file.Keys), len(file.KV), len(file.Tensors), gguf.IndexedTensors(file))
		}
		if file.Alignment <= 0 || file.DataOffset%file.Alignment != 0 {
			t.Fatalf("data offset %d not aligned to %d", file.DataOffset, file.Alignment)
		}
		for _, ti := range file.Tensors {
			if end := file.DataOffset + int64(ti.Offset) + ti.Size; ti.Size < 0 || end > size {
				t.Fatalf("tensor %s ends at %d of %d", ti.Name, end, size)
			}
			ti.Elements()
		}
		for _, k := range file.Keys {
			_ = file.KV[k].String()
		}
		file.Architecture()
		file.ContextLength()
		file.ChatTemplate()
		for _, name := range []string{"bos", "eos", "unknown", "padding"} {
			if id, ok := file.SpecialToken(name); ok {
				file.TokenText(id)
			}
		}
		file.TokenText(0)
		file.TokenText(-1)
	})
}

// TestSharedModelsMangled reads each real file in ../shared/models cut at many points and with
// bits flipped all over its header: every outcome is a File or an error wrapping a sentinel.
func TestSharedModelsMangled(t *testing.T) {
	paths := sharedModels()
	if len(paths) == 0 {
		t.Skip("no ../shared/models")
	}
	rng := rand.New(rand.NewPCG(16, 2))
	check := func(t *testing.T, b []byte, what string) {
		if _, err := readBytes(b); err != nil && !errors.Is(err, gguf.ErrNotGGUF) && !errors.Is(err, gguf.ErrTruncated) && !errors.Is(err, gguf.ErrInvalid) {
			t.Fatalf("%s: error %v wraps no sentinel", what, err)
		}
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			f, err := readBytes(b)
			if err != nil {
				t.Fatal(err)
			}
			hl := min(f.DataOffset, int64(len(b))) // a file without tensors ends before its aligned data offset
			for range 50 {
				cut := rng.Int64N(hl)
				if _, err := readBytes(b[:cut]); !errors.Is(err, gguf.ErrTruncated) && !errors.Is(err, gguf.ErrNotGGUF) {
					t.Fatalf("cut at %d of %d: %v, want ErrTruncated", cut, len(b), err)
				}
			}
			head := b[:hl]
			for range 200 {
				check(t, append(flip(rng, head), b[hl:]...), "flipped")
			}
		})
	}
}
