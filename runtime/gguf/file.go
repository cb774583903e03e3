// Package gguf reads and validates GGUF model files, the format llama.cpp loads.
//
// The reader is strict: it checks everything llama.cpp checks before it trusts a file (and a
// few things it would crash on), bounds every count and length by the file's size so that a
// hostile header cannot make it allocate more than the file holds, and never reads tensor
// data. Writing GGUF files (test models for tests and benchmarks) is package gguftest's.
package gguf

import (
	"errors"
	"math"
)

var (
	// ErrNotGGUF means the file is not a GGUF model file at all.
	ErrNotGGUF = errors.New("not a GGUF model file (download the model in GGUF format)")
	// ErrTruncated means the file ends before its header, metadata or tensor data do.
	ErrTruncated = errors.New("GGUF file is truncated (download it again)")
	// ErrInvalid means the file is a GGUF file that breaks the format's rules.
	ErrInvalid = errors.New("invalid GGUF file")
)

// DefaultAlignment is the tensor data alignment when general.alignment is absent.
const DefaultAlignment = 32

// TensorInfo describes one tensor. Dims are in ggml order (ne[0], the row length, first).
type TensorInfo struct {
	Name   string
	Dims   []uint64
	Type   uint32 // ggml type, see TypeF32 and friends
	Offset uint64 // from File.DataOffset
	Size   int64  // bytes
}

// Elements returns the number of elements of the tensor.
func (t TensorInfo) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// File is a GGUF file's header, metadata and tensor directory.
type File struct {
	Version    uint32
	Keys       []string // metadata keys in file order
	KV         map[string]Value
	Tensors    []TensorInfo
	Alignment  int64
	DataOffset int64 // start of the tensor data section
	FileSize   int64

	tensorIndex map[string]int
}

// Value returns the metadata value of key.
func (f *File) Value(key string) (Value, bool) {
	v, ok := f.KV[key]
	return v, ok
}

// String returns a string value.
func (f *File) String(key string) (string, bool) { return f.KV[key].Text() }

// Uint returns an integer value of any integer type as uint64; it reports false when the key
// is absent, not an integer, or negative.
func (f *File) Uint(key string) (uint64, bool) { return f.KV[key].Uint() }

// Int returns an integer value of any integer type as int64.
func (f *File) Int(key string) (int64, bool) { return f.KV[key].Int() }

// Float returns a float (or integer) value as float64.
func (f *File) Float(key string) (float64, bool) { return f.KV[key].Float() }

// Bool returns a bool value.
func (f *File) Bool(key string) (bool, bool) { return f.KV[key].Bool() }

// Strings returns an array of strings. The slice is shared; callers must not modify it.
func (f *File) Strings(key string) ([]string, bool) { return f.KV[key].Strings() }

// Architecture returns general.architecture ("llama"), or "" if absent.
func (f *File) Architecture() string {
	s, _ := f.String("general.architecture")
	return s
}

// ContextLength returns the model's training context length (<arch>.context_length), or 0
// if absent.
func (f *File) ContextLength() int {
	n, ok := f.Uint(f.Architecture() + ".context_length")
	if !ok || n > math.MaxInt32 {
		return 0
	}
	return int(n)
}

// ChatTemplate returns tokenizer.chat_template, or "" if absent.
func (f *File) ChatTemplate() string {
	s, _ := f.String("tokenizer.chat_template")
	return s
}

// TokenText returns the text of token id from tokenizer.ggml.tokens.
func (f *File) TokenText(id int) (string, bool) {
	toks, ok := f.Strings("tokenizer.ggml.tokens")
	if !ok || id < 0 || id >= len(toks) {
		return "", false
	}
	return toks[id], true
}

// SpecialToken returns the id of a special token by name ("bos", "eos", "unknown",
// "padding", ...), read from tokenizer.ggml.<name>_token_id.
func (f *File) SpecialToken(name string) (int, bool) {
	n, ok := f.Uint("tokenizer.ggml." + name + "_token_id")
	if !ok || n > math.MaxInt32 {
		return 0, false
	}
	return int(n), true
}

// Tensor returns the tensor called name.
func (f *File) Tensor(name string) (TensorInfo, bool) {
	i, ok := f.tensorIndex[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.Tensors[i], true
}
