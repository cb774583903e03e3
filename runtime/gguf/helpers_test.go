package gguf_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

// raw builds GGUF bytes by hand, for files the Writer refuses to make.
type raw struct{ bytes.Buffer }

func (r *raw) u32(v uint32) *raw {
	r.Write(binary.LittleEndian.AppendUint32(nil, v))
	return r
}

func (r *raw) u64(v uint64) *raw {
	r.Write(binary.LittleEndian.AppendUint64(nil, v))
	return r
}

func (r *raw) str(s string) *raw {
	r.u64(uint64(len(s)))
	r.WriteString(s)
	return r
}

// header writes the magic, version 3 and the counts.
func (r *raw) header(tensors, kvs uint64) *raw {
	r.WriteString("GGUF")
	return r.u32(3).u64(tensors).u64(kvs)
}

// kvU32 writes a uint32 metadata pair.
func (r *raw) kvU32(key string, v uint32) *raw {
	return r.str(key).u32(uint32(gguf.ValueUint32)).u32(v)
}

// tensor writes a tensor info.
func (r *raw) tensor(name string, typ uint32, offset uint64, dims ...uint64) *raw {
	r.str(name).u32(uint32(len(dims)))
	for _, d := range dims {
		r.u64(d)
	}
	return r.u32(typ).u64(offset)
}

// data pads to 32 and appends n zero bytes of tensor data.
func (r *raw) data(n int) *raw {
	r.Write(make([]byte, int(gguf.AlignUp(int64(r.Len()), 32))-r.Len()+n))
	return r
}

func readBytes(b []byte) (*gguf.File, error) { return gguf.Read(bytes.NewReader(b), int64(len(b))) }

// writeBytes runs w.WriteTo into memory.
func writeBytes(t testing.TB, w *gguftest.Writer) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := w.WriteTo(&buf)
	if err != nil {
		t.Fatalf("WriteTo: %v", err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo returned %d, wrote %d", n, buf.Len())
	}
	return buf.Bytes()
}

// wantErr checks err against a sentinel (nil for success) and a message substring.
func wantErr(t testing.TB, err, sentinel error, substr string) {
	t.Helper()
	switch {
	case sentinel == nil && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case sentinel != nil && !errors.Is(err, sentinel):
		t.Fatalf("error %v, want %v", err, sentinel)
	case substr != "" && (err == nil || !strings.Contains(err.Error(), substr)):
		t.Fatalf("error %v, want it to contain %q", err, substr)
	}
}

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	r io.ReaderAt
	n int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n += int64(n)
	return n, err
}
