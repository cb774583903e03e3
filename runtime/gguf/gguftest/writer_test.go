package gguftest

import (
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf"
)

func TestWriterErrors(t *testing.T) {
	cases := []struct {
		name  string
		build func(w *Writer)
		want  string
	}{
		{"duplicate key", func(w *Writer) { w.AddUint32("k", 1); w.AddString("k", "x") }, "key added twice"},
		{"unsupported value", func(w *Writer) { w.AddValue("k", gguf.Value{Type: gguf.ValueUint32}) }, "unsupported value <nil>"},
		{"unsupported array", func(w *Writer) { w.AddArray("k", []int{1}) }, "not a supported array type"},
		{"duplicate tensor", func(w *Writer) {
			w.AddTensorF32("t", []uint64{1}, []float32{1})
			w.AddTensorF32("t", []uint64{1}, []float32{1})
		}, "name added twice"},
		{"empty tensor name", func(w *Writer) { w.AddTensorF32("", []uint64{1}, []float32{1}) }, "name must be"},
		{"data size", func(w *Writer) { w.AddTensorF32("t", []uint64{2, 2}, []float32{1}) }, "4 bytes of data"},
		{"unknown type", func(w *Writer) { w.AddTensor("t", 77, []uint64{1}, []byte{0}) }, "unknown tensor type 77"},
		{"block multiple", func(w *Writer) { w.AddTensor("t", gguf.TypeQ4_0, []uint64{16}, make([]byte, 9)) }, "multiple of 32"},
		{"bad alignment", func(w *Writer) { w.AddUint32("general.alignment", 3) }, "power of two"},
		{"func writes too little", func(w *Writer) {
			w.AddTensorFunc("t", gguf.TypeF32, []uint64{4}, func(w io.Writer) error { _, err := w.Write(make([]byte, 15)); return err })
		}, "wrote 15 bytes, expected 16"},
		{"func fails", func(w *Writer) {
			w.AddTensorFunc("t", gguf.TypeF32, []uint64{4}, func(io.Writer) error { return errors.New("boom") })
		}, "write tensor t: boom"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := NewWriter()
			c.build(w)
			_, err := w.WriteTo(io.Discard)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("WriteTo error %v, want %q", err, c.want)
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "m.gguf")
			if err := w.WriteFile(path); err == nil {
				t.Fatal("WriteFile succeeded")
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("WriteFile left %v behind", entries)
			}
		})
	}
}

func TestWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	w := NewWriter()
	w.AddString("general.architecture", "test")
	w.AddTensorFunc("t", gguf.TypeF32, []uint64{8}, func(w io.Writer) error { _, err := w.Write(make([]byte, 32)); return err })
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Architecture() != "test" || len(f.Tensors) != 1 || f.Tensors[0].Size != 32 {
		t.Errorf("read back %+v", f)
	}
	if err := NewWriter().WriteFile(filepath.Join(t.TempDir(), "missing", "m.gguf")); err == nil {
		t.Error("WriteFile into a missing directory succeeded")
	}
}

func TestF32ToF16(t *testing.T) {
	cases := []struct {
		f    float32
		want uint16
	}{
		{0, 0}, {float32(math.Copysign(0, -1)), 0x8000}, {1, 0x3c00}, {-2, 0xc000}, {0.5, 0x3800},
		{65504, 0x7bff}, {65520, 0x7c00}, {1e6, 0x7c00}, {float32(math.Inf(-1)), 0xfc00},
		{0x1p-14, 0x0400}, {0x1p-24, 0x0001}, {0x1p-26, 0}, {0x1.8p-24, 0x0002}, {0x1p-25 * 1.0001, 0x0001},
		{1 + 0x1p-11, 0x3c00}, {1 + 0x3p-11, 0x3c02}, {0.1, 0x2e66}, {5.41e-4, 0x106f},
	}
	for _, c := range cases {
		if got := f32ToF16(c.f); got != c.want {
			t.Errorf("f32ToF16(%g) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
	if got := f32ToF16(float32(math.NaN())); got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
		t.Errorf("f32ToF16(NaN) = %#04x", got)
	}
}
