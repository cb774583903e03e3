package gguf_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

// everyValue holds one scalar and one array of every metadata type.
var everyValue = []struct {
	key string
	v   any
}{
	{"u8", uint8(200)}, {"i8", int8(-100)}, {"u16", uint16(60000)}, {"i16", int16(-30000)},
	{"u32", uint32(4000000000)}, {"i32", int32(-2000000000)}, {"f32", float32(1.5)},
	{"bool", true}, {"str", "héllo\x00world"}, {"u64", uint64(math.MaxUint64)},
	{"i64", int64(math.MinInt64)}, {"f64", math.Pi}, {"empty", ""},
	{"a.u8", []uint8{0, 1, 255}}, {"a.i8", []int8{-128, 0, 127}}, {"a.u16", []uint16{1, 65535}},
	{"a.i16", []int16{-32768, 32767}}, {"a.u32", []uint32{7, math.MaxUint32}},
	{"a.i32", []int32{-1, 2}}, {"a.f32", []float32{0.25, -3}}, {"a.bool", []bool{true, false, true}},
	{"a.str", []string{"", "a", "▁the"}}, {"a.u64", []uint64{math.MaxUint64}},
	{"a.i64", []int64{math.MinInt64, 5}}, {"a.f64", []float64{1e300, -0.5}},
	{"a.empty", []string{}},
}

func TestRoundTrip(t *testing.T) {
	w := gguftest.NewWriter()
	for _, e := range everyValue {
		if _, ok := gguf.ArrayType(e.v); ok {
			w.AddArray(e.key, e.v)
		} else {
			w.AddValue(e.key, gguf.UntypedValue(e.v))
		}
	}
	w.AddUint32("general.alignment", 64)
	f32 := []float32{1, 2, 3, 4, 5, 6}
	w.AddTensorF32("a", []uint64{3, 2}, f32)
	w.AddTensor("b", gguf.TypeQ8_0, []uint64{64}, make([]byte, 68))
	w.AddTensor("c", gguf.TypeQ4_K, []uint64{256, 2, 1, 1}, make([]byte, 288))
	w.AddTensor("d", gguf.TypeF16, nil, make([]byte, 2)) // a scalar: no dims
	b := writeBytes(t, w)

	f, err := readBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 || f.Alignment != 64 || f.DataOffset%64 != 0 || f.FileSize != int64(len(b)) {
		t.Errorf("version %d alignment %d data offset %d size %d", f.Version, f.Alignment, f.DataOffset, f.FileSize)
	}
	if len(f.Keys) != len(everyValue)+1 {
		t.Fatalf("keys %v", f.Keys)
	}
	for i, e := range everyValue {
		if f.Keys[i] != e.key {
			t.Errorf("key %d is %q, want %q", i, f.Keys[i], e.key)
		}
		got := f.KV[e.key]
		want, _ := gguf.NewValue(e.v)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", e.key, got, want)
		}
	}
	wantTensors := []gguf.TensorInfo{
		{Name: "a", Dims: []uint64{3, 2}, Type: gguf.TypeF32, Offset: 0, Size: 24},
		{Name: "b", Dims: []uint64{64}, Type: gguf.TypeQ8_0, Offset: 64, Size: 68},
		{Name: "c", Dims: []uint64{256, 2, 1, 1}, Type: gguf.TypeQ4_K, Offset: 192, Size: 288},
		{Name: "d", Dims: []uint64{}, Type: gguf.TypeF16, Offset: 512, Size: 2},
	}
	if !reflect.DeepEqual(f.Tensors, wantTensors) {
		t.Errorf("tensors\n%+v\nwant\n%+v", f.Tensors, wantTensors)
	}
	for i, want := range f32 {
		off := f.DataOffset + int64(f.Tensors[0].Offset) + int64(4*i)
		if got := math.Float32frombits(binary.LittleEndian.Uint32(b[off:])); got != want {
			t.Errorf("tensor a element %d = %v, want %v", i, got, want)
		}
	}
	if ti, ok := f.Tensor("c"); !ok || ti.Elements() != 512 {
		t.Errorf("Tensor(c) = %+v, %v", ti, ok)
	}
	if _, ok := f.Tensor("nope"); ok {
		t.Error("Tensor(nope) found")
	}
}

// TestWriterMatchesReaderValues copies every value of a file through AddValue.
func TestWriterCopiesValues(t *testing.T) {
	w := gguftest.NewWriter()
	for _, e := range everyValue {
		w.Add(e.key, e.v)
	}
	f, err := readBytes(writeBytes(t, w))
	if err != nil {
		t.Fatal(err)
	}
	w2 := gguftest.NewWriter()
	for _, k := range f.Keys {
		w2.AddValue(k, f.KV[k])
	}
	if a, b := writeBytes(t, w), writeBytes(t, w2); string(a) != string(b) {
		t.Error("copied file differs")
	}
}

func TestAccessors(t *testing.T) {
	w := gguftest.NewWriter()
	for _, e := range everyValue {
		w.Add(e.key, e.v)
	}
	w.AddString("general.architecture", "llama")
	w.AddUint32("llama.context_length", 4096)
	w.AddString("tokenizer.chat_template", "{{ x }}")
	w.AddStrings("tokenizer.ggml.tokens", []string{"<unk>", "<s>", "</s>"})
	w.AddUint32("tokenizer.ggml.bos_token_id", 1)
	w.AddInt32("tokenizer.ggml.eos_token_id", 2)
	f, err := readBytes(writeBytes(t, w))
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	pair := func(v any, ok bool) []any { return []any{v, ok} }
	check("String(str)", pair(f.String("str")), pair("héllo\x00world", true))
	check("String(u8)", pair(f.String("u8")), pair("", false))
	check("String(missing)", pair(f.String("missing")), pair("", false))
	check("Uint(u8)", pair(f.Uint("u8")), pair(uint64(200), true))
	check("Uint(u64)", pair(f.Uint("u64")), pair(uint64(math.MaxUint64), true))
	check("Uint(i8)", pair(f.Uint("i8")), pair(uint64(0), false))
	check("Uint(f32)", pair(f.Uint("f32")), pair(uint64(0), false))
	check("Int(i16)", pair(f.Int("i16")), pair(int64(-30000), true))
	check("Int(u64)", pair(f.Int("u64")), pair(int64(0), false))
	check("Float(f32)", pair(f.Float("f32")), pair(1.5, true))
	check("Float(f64)", pair(f.Float("f64")), pair(math.Pi, true))
	check("Float(i32)", pair(f.Float("i32")), pair(-2e9, true))
	check("Float(str)", pair(f.Float("str")), pair(0.0, false))
	check("Bool(bool)", pair(f.Bool("bool")), pair(true, true))
	check("Bool(u8)", pair(f.Bool("u8")), pair(false, false))
	check("Strings(a.str)", pair(f.Strings("a.str")), pair([]string{"", "a", "▁the"}, true))
	check("Strings(str)", pair(f.Strings("str")), pair([]string(nil), false))
	check("Architecture", f.Architecture(), "llama")
	check("ContextLength", f.ContextLength(), 4096)
	check("ChatTemplate", f.ChatTemplate(), "{{ x }}")
	check("TokenText(1)", pair(f.TokenText(1)), pair("<s>", true))
	check("TokenText(3)", pair(f.TokenText(3)), pair("", false))
	check("TokenText(-1)", pair(f.TokenText(-1)), pair("", false))
	check("SpecialToken(bos)", pair(f.SpecialToken("bos")), pair(1, true))
	check("SpecialToken(eos)", pair(f.SpecialToken("eos")), pair(2, true))
	check("SpecialToken(pad)", pair(f.SpecialToken("padding")), pair(0, false))

	v, _ := f.Value("a.u16")
	check("Ints(a.u16)", pair(v.Ints()), pair([]int64{1, 65535}, true))
	check("Floats(a.u16)", pair(v.Floats()), pair([]float64{1, 65535}, true))
	check("Len(a.u16)", v.Len(), 2)
	check("IsArray(a.u16)", v.IsArray(), true)
	check("String(a.u16)", v.String(), "[2]uint16{1, 65535}")
	v, _ = f.Value("a.f32")
	check("Floats(a.f32)", pair(v.Floats()), pair([]float64{0.25, -3}, true))
	check("Ints(a.f32)", pair(v.Ints()), pair([]int64(nil), false))
	v, _ = f.Value("a.u64")
	check("Ints(a.u64)", pair(v.Ints()), pair([]int64(nil), false))
	v, _ = f.Value("str")
	check("String(str)", v.String(), `"héllo\x00world"`)

	empty := &gguf.File{}
	check("empty Architecture", empty.Architecture(), "")
	check("empty ContextLength", empty.ContextLength(), 0)
	check("empty ChatTemplate", empty.ChatTemplate(), "")
}

func TestStrict(t *testing.T) {
	huge := uint64(1) << 62
	type tc struct {
		name     string
		file     func() []byte
		sentinel error
		substr   string
	}
	valid := func(r *raw) []byte { return r.Bytes() }
	h := func(tensors, kvs uint64) *raw { return new(raw).header(tensors, kvs) }
	cases := []tc{
		{"empty", func() []byte { return nil }, gguf.ErrNotGGUF, "empty"},
		{"bad magic", func() []byte { return []byte("GGUX\x03\x00\x00\x00") }, gguf.ErrNotGGUF, `"GGUX"`},
		{"text", func() []byte { return []byte("just some notes, not a model\n") }, gguf.ErrNotGGUF, ""},
		{"html", func() []byte { return []byte("<!DOCTYPE html><html>404</html>") }, gguf.ErrNotGGUF, "HTML"},
		{"lfs pointer", func() []byte { return []byte("version https://git-lfs.github.com/spec/v1\noid sha256:ab") }, gguf.ErrNotGGUF, "LFS"},
		{"ggjt", func() []byte { return []byte("tjgg\x03\x00\x00\x00") }, gguf.ErrNotGGUF, "GGML"},
		{"short magic", func() []byte { return []byte("GG") }, gguf.ErrTruncated, ""},
		{"version 1", func() []byte { return valid(new(raw).u32(0x46554747).u32(1).u64(0).u64(0)) }, gguf.ErrInvalid, "version 1"},
		{"version 4", func() []byte { return valid(new(raw).u32(0x46554747).u32(4).u64(0).u64(0)) }, gguf.ErrInvalid, "version 4"},
		{"big endian", func() []byte { return valid(new(raw).u32(0x46554747).u32(0x03000000).u64(0).u64(0)) }, gguf.ErrInvalid, "byte-swapped"},
		{"version 2 ok", func() []byte { return valid(new(raw).u32(0x46554747).u32(2).u64(0).u64(0)) }, nil, ""},
		{"huge tensor count", func() []byte { return valid(h(huge, 0).data(64)) }, gguf.ErrTruncated, "tensors"},
		{"huge kv count", func() []byte { return valid(h(0, huge).data(64)) }, gguf.ErrTruncated, "metadata keys"},
		{"counts add up past end", func() []byte { return valid(h(2, 2).data(60)) }, gguf.ErrTruncated, ""},
		{"huge key length", func() []byte { return valid(h(0, 1).u64(huge).data(16)) }, gguf.ErrTruncated, "metadata key is"},
		{"huge string value", func() []byte { return valid(h(0, 1).str("k").u32(uint32(gguf.ValueString)).u64(huge)) }, gguf.ErrTruncated, "metadata k is"},
		{"huge array", func() []byte {
			return valid(h(0, 1).str("k").u32(uint32(gguf.ValueArray)).u32(uint32(gguf.ValueUint8)).u64(huge).u64(0))
		}, gguf.ErrTruncated, "array of"},
		{"huge string array", func() []byte {
			return valid(h(0, 1).str("k").u32(uint32(gguf.ValueArray)).u32(uint32(gguf.ValueString)).u64(1 << 20).data(1 << 16))
		}, gguf.ErrTruncated, "array of"},
		{"unknown value type", func() []byte { return valid(h(0, 1).str("k").u32(13).u32(0)) }, gguf.ErrInvalid, "unknown type 13"},
		{"unknown element type", func() []byte {
			return valid(h(0, 1).str("k").u32(uint32(gguf.ValueArray)).u32(99).u64(0))
		}, gguf.ErrInvalid, "unknown type 99"},
		{"nested array", func() []byte {
			return valid(h(0, 1).str("k").u32(uint32(gguf.ValueArray)).u32(uint32(gguf.ValueArray)).u64(0))
		}, gguf.ErrInvalid, "array of arrays"},
		{"duplicate key", func() []byte { return valid(h(0, 2).kvU32("k", 1).kvU32("k", 2)) }, gguf.ErrInvalid, `"k" appears twice`},
		{"alignment not power of two", func() []byte { return valid(h(0, 1).kvU32("general.alignment", 48)) }, gguf.ErrInvalid, "power of two"},
		{"alignment zero", func() []byte { return valid(h(0, 1).kvU32("general.alignment", 0)) }, gguf.ErrInvalid, "power of two"},
		{"alignment wrong type", func() []byte {
			return valid(h(0, 1).str("general.alignment").u32(uint32(gguf.ValueUint64)).u64(32))
		}, gguf.ErrInvalid, "expected uint32"},
		{"tensor ok", func() []byte { return valid(h(1, 0).tensor("t", gguf.TypeF32, 0, 4, 2).data(32)) }, nil, ""},
		{"unknown tensor type", func() []byte { return valid(h(1, 0).tensor("t", 100, 0, 4).data(16)) }, gguf.ErrInvalid, "unknown type 100"},
		{"removed tensor type", func() []byte { return valid(h(1, 0).tensor("t", 4, 0, 32).data(32)) }, gguf.ErrInvalid, "unknown type 4"},
		{"five dims", func() []byte { return valid(h(1, 0).tensor("t", gguf.TypeF32, 0, 1, 1, 1, 1, 1).data(4)) }, gguf.ErrInvalid, "5 dimensions"},
		{"zero dim", func() []byte { return valid(h(1, 0).tensor("t", gguf.TypeF32, 0, 4, 0).data(4)) }, gguf.ErrInvalid, "dimension 1 is zero"},
		{"too many elements", func() []byte {
			return valid(h(1, 0).tensor("t", gguf.TypeF32, 0, 1<<40, 1<<40).data(4))
		}, gguf.ErrInvalid, "too many elements"},
		{"too many bytes", func() []byte { return valid(h(1, 0).tensor("t", gguf.TypeF64, 0, 1<<61).data(4)) }, gguf.ErrInvalid, "too large"},
		{"row not a block multiple", func() []byte { return valid(h(1, 0).tensor("t", gguf.TypeQ8_0, 0, 33).data(64)) }, gguf.ErrInvalid, "multiple of 32"},
		{"misaligned offset", func() []byte {
			return valid(h(2, 0).tensor("a", gguf.TypeF32, 0, 4).tensor("b", gguf.TypeF32, 16, 4).data(64))
		}, gguf.ErrInvalid, "not a multiple of the alignment"},
		{"offset gap", func() []byte {
			return valid(h(2, 0).tensor("a", gguf.TypeF32, 0, 4).tensor("b", gguf.TypeF32, 64, 4).data(96))
		}, gguf.ErrInvalid, "expected 32"},
		{"overlapping tensors", func() []byte {
			return valid(h(2, 0).tensor("a", gguf.TypeF32, 0, 16).tensor("b", gguf.TypeF32, 32, 4).data(96))
		}, gguf.ErrInvalid, "expected 64"},
		{"huge offset", func() []byte { return valid(h(1, 0).tensor("a", gguf.TypeF32, 1<<63, 4).data(16)) }, gguf.ErrInvalid, "expected 0"},
		{"data past end", func() []byte {
			return valid(h(1, 0).tensor("blk.0.attn_q.weight", gguf.TypeF32, 0, 8, 8).data(255))
		}, gguf.ErrTruncated, "tensor blk.0.attn_q.weight data extends past the end of the file (file is truncated?)"},
		{"no data section", func() []byte { return valid(h(1, 0).tensor("t", gguf.TypeF32, 0, 1)) }, gguf.ErrTruncated, "before its tensor data"},
		{"duplicate tensor", func() []byte {
			return valid(h(2, 0).tensor("t", gguf.TypeF32, 0, 4).tensor("t", gguf.TypeF32, 32, 4).data(64))
		}, gguf.ErrInvalid, "tensor t appears twice"},
		{"empty tensor name", func() []byte { return valid(h(1, 0).tensor("", gguf.TypeF32, 0, 4).data(16)) }, gguf.ErrInvalid, "empty name"},
		{"long tensor name", func() []byte {
			return valid(h(1, 0).tensor(strings.Repeat("x", 64), gguf.TypeF32, 0, 4).data(16))
		}, gguf.ErrInvalid, "longer than 63"},
		{"truncated dims", func() []byte { return valid(h(1, 0).str("t").u32(4).u64(1).data(0)) }, gguf.ErrTruncated, "file ends inside tensor t"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := readBytes(c.file())
			t.Log(err)
			wantErr(t, err, c.sentinel, c.substr)
		})
	}
}

// TestHostileHeaderAllocations checks that a header claiming huge counts or lengths does not
// make the reader allocate for them.
func TestHostileHeaderAllocations(t *testing.T) {
	files := [][]byte{
		new(raw).header(1<<40, 1<<40).data(1 << 10).Bytes(),
		new(raw).header(0, 1).str("k").u32(uint32(gguf.ValueArray)).u32(uint32(gguf.ValueUint64)).u64(1 << 40).data(1 << 10).Bytes(),
		new(raw).header(0, 1).u64(1 << 40).data(1 << 10).Bytes(),
		new(raw).header(1, 0).str("t").u32(4).data(1 << 10).Bytes(),
	}
	for i, b := range files {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := readBytes(b)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Errorf("file %d: no error", i)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
			t.Errorf("file %d: allocated %d bytes", i, alloc)
		}
	}
}

// TestTruncation cuts a small valid file at every length and checks the verdict.
func TestTruncation(t *testing.T) {
	w := gguftest.NewWriter()
	w.AddString("general.architecture", "llama")
	w.AddStrings("tokenizer.ggml.tokens", []string{"a", "bb", "ccc"})
	w.AddFloat32s("tokenizer.ggml.scores", []float32{1, 2, 3})
	w.AddTensorF32("x", []uint64{3}, []float32{1, 2, 3})
	w.AddTensorF32("y", []uint64{5}, []float32{1, 2, 3, 4, 5})
	b := writeBytes(t, w)
	f, err := readBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	last := f.Tensors[len(f.Tensors)-1]
	dataEnd := f.DataOffset + int64(last.Offset) + last.Size
	for n := 0; n < len(b); n++ {
		_, err := readBytes(b[:n])
		switch {
		case n == 0:
			wantErr(t, err, gguf.ErrNotGGUF, "")
		case n < int(dataEnd):
			if !errors.Is(err, gguf.ErrTruncated) {
				t.Fatalf("cut at %d of %d: %v, want ErrTruncated", n, len(b), err)
			}
		default: // only the padding after the last tensor is missing, as llama.cpp allows
			if err != nil {
				t.Fatalf("cut at %d (data ends at %d): %v", n, dataEnd, err)
			}
		}
		// a reader that holds fewer bytes than the size it claims
		if n >= 4 && n <= int(f.DataOffset-f.Alignment) { // inside the metadata
			if _, err := gguf.Read(bytes.NewReader(b[:n]), int64(len(b))); !errors.Is(err, gguf.ErrTruncated) {
				t.Fatalf("short reader of %d bytes: %v, want ErrTruncated", n, err)
			}
		}
	}
}

// TestMetadataOnly checks that Read does not read tensor data (beyond one read-ahead buffer).
func TestMetadataOnly(t *testing.T) {
	w := gguftest.NewWriter()
	w.AddString("general.architecture", "llama")
	w.AddTensor("big", gguf.TypeF32, []uint64{1 << 20}, make([]byte, 4<<20))
	b := writeBytes(t, w)
	cr := &countingReaderAt{r: bytes.NewReader(b)}
	if _, err := gguf.Read(cr, int64(len(b))); err != nil {
		t.Fatal(err)
	}
	if cr.n > 128<<10 {
		t.Errorf("read %d bytes of a %d-byte file", cr.n, len(b))
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("hello, this is a text file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := gguf.ReadFile(text)
	wantErr(t, err, gguf.ErrNotGGUF, "notes.txt")
	_, err = gguf.ReadFile(filepath.Join(dir, "missing.gguf"))
	wantErr(t, err, os.ErrNotExist, "")
	_, err = gguf.ReadFile(dir)
	wantErr(t, err, gguf.ErrNotGGUF, "not a regular file")
}

// TestSharedModels reads the real llama.cpp files in ../shared/models when that folder exists.
func TestSharedModels(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "models", "*.gguf"))
	if len(paths) == 0 {
		t.Skip("no ../shared/models")
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			f, err := gguf.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if f.Architecture() == "" || len(f.Keys) == 0 {
				t.Errorf("architecture %q, %d keys", f.Architecture(), len(f.Keys))
			}
			if tok, ok := f.TokenText(0); !ok || tok == "" {
				t.Errorf("TokenText(0) = %q, %v", tok, ok)
			}
			fh, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			for _, cut := range []int64{1, 7, 100, f.FileSize / 2, f.FileSize - 100, f.FileSize - 8} {
				if cut <= 0 || cut >= f.FileSize {
					continue
				}
				_, err := gguf.Read(fh, f.FileSize-cut)
				if !errors.Is(err, gguf.ErrTruncated) {
					t.Errorf("short by %d bytes: %v, want ErrTruncated", cut, err)
				}
			}
		})
	}
	facts := map[string]func(*testing.T, *gguf.File){
		"stories260K.gguf": func(t *testing.T, f *gguf.File) {
			bos, _ := f.SpecialToken("bos")
			tok, _ := f.TokenText(bos)
			if f.ContextLength() != 2048 || len(f.Tensors) != 48 || tok != "<s>" || f.ChatTemplate() != "" {
				t.Errorf("ctx %d tensors %d bos %q", f.ContextLength(), len(f.Tensors), tok)
			}
		},
		"ggml-vocab-phi-3.gguf": func(t *testing.T, f *gguf.File) {
			if !strings.Contains(f.ChatTemplate(), "message") || len(f.Tensors) != 0 {
				t.Errorf("template %q, %d tensors", f.ChatTemplate(), len(f.Tensors))
			}
		},
		"llama-2-tiny-random.gguf": func(t *testing.T, f *gguf.File) {
			ti, ok := f.Tensor("token_embd.weight")
			if !ok || ti.Type != gguf.TypeF16 || !reflect.DeepEqual(ti.Dims, []uint64{8, 32000}) {
				t.Errorf("token_embd.weight %+v", ti)
			}
		},
	}
	for _, p := range paths {
		if check, ok := facts[filepath.Base(p)]; ok {
			f, err := gguf.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			t.Run("facts/"+filepath.Base(p), func(t *testing.T) { check(t, f) })
		}
	}
}

func BenchmarkRead(b *testing.B) {
	w, err := gguftest.NewTinyLlama(gguftest.TinyLlamaOptions{Vocab: 32000, Embd: 32, Layers: 1})
	if err != nil {
		b.Fatal(err)
	}
	data := writeBytes(b, w)
	for b.Loop() {
		if _, err := readBytes(data); err != nil {
			b.Fatal(err)
		}
	}
}
