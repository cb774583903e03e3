package gguftest

import (
	"bytes"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf"
)

func readBytes(b []byte) (*gguf.File, error) { return gguf.Read(bytes.NewReader(b), int64(len(b))) }

// writeBytes runs w.WriteTo into memory.
func writeBytes(t testing.TB, w *Writer) []byte {
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
