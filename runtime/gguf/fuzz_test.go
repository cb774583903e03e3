package gguf

import (
	"testing"
)

// FuzzRead feeds arbitrary bytes to Read: it must never panic, and what it accepts must hold
// together.
func FuzzRead(f *testing.F) {
	w := NewWriter()
	for _, e := range everyValue {
		w.add(e.key, e.v)
	}
	w.AddTensorF32("t", []uint64{2, 2}, []float32{1, 2, 3, 4})
	w.AddTensor("q", TypeQ8_0, []uint64{32}, make([]byte, 34))
	f.Add(writeBytes(f, w))
	tiny, err := NewTinyLlama(TinyLlamaOptions{Vocab: 260, Embd: 8, Heads: 2, KVHeads: 1, FF: 8, Layers: 1})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(writeBytes(f, tiny))
	f.Add(new(raw).header(1, 1).kvU32("general.alignment", 64).tensor("t", TypeF32, 0, 4).data(16).Bytes())
	f.Add([]byte("GGUF"))
	f.Add([]byte("not a model"))

	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := readBytes(b)
		if err != nil {
			return
		}
		if len(file.Keys) != len(file.KV) || len(file.Tensors) != len(file.tensorIndex) {
			t.Fatalf("%d keys, %d values; %d tensors, %d indexed", len(file.Keys), len(file.KV), len(file.Tensors), len(file.tensorIndex))
		}
		if file.DataOffset%file.Alignment != 0 {
			t.Fatalf("data offset %d not aligned to %d", file.DataOffset, file.Alignment)
		}
		for _, ti := range file.Tensors {
			if end := file.DataOffset + int64(ti.Offset) + ti.Size; ti.Size < 0 || end > int64(len(b)) {
				t.Fatalf("tensor %s ends at %d of %d", ti.Name, end, len(b))
			}
		}
		for _, k := range file.Keys {
			_ = file.KV[k].String()
		}
		file.Architecture()
		file.ContextLength()
		file.TokenText(0)
	})
}
