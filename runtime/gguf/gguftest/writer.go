// Package gguftest writes GGUF model files for tests and benchmarks, as net/http/httptest
// serves HTTP for them: a Writer that builds GGUF v3 files, random-weight models llama.cpp
// loads and runs (WriteTinyLlama, a generator; WriteTinyBERT, an embedder or reranker),
// random-weight mmproj projectors llama.cpp's mtmd encodes images and audio with
// (WriteVisionProjector, WriteAudioProjector), random LoRA adapters for a model file or for
// another model's shape (WriteLoRA, WriteTinyLlamaLoRA), and FillF32, which breaks a model's
// weights in place. The server never writes a model, so this lives beside the reader (package
// gguf) rather than in it.
package gguftest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"

	"github.com/superfluid/superfluid/runtime/gguf"
)

// Writer builds a GGUF v3 file: metadata in insertion order, then the tensor directory, then
// the tensor data, each tensor aligned. Tensor data may be given as bytes or produced while
// writing (AddTensorFunc), so a multi-gigabyte model never has to be held in memory.
//
// Add methods record the first error (a duplicate key or tensor name, a shape that does not
// fit the type) and WriteTo returns it.
type Writer struct {
	keys    []string
	kv      map[string]gguf.Value
	tensors []writerTensor
	names   map[string]bool
	err     error
}

type writerTensor struct {
	info  gguf.TensorInfo
	data  []byte
	write func(io.Writer) error
}

// NewWriter returns an empty Writer.
func NewWriter() *Writer {
	return &Writer{kv: map[string]gguf.Value{}, names: map[string]bool{}}
}

func (w *Writer) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// AddValue adds a metadata value, for example one read from another File.
func (w *Writer) AddValue(key string, v gguf.Value) {
	if _, dup := w.kv[key]; dup {
		w.fail(fmt.Errorf("add metadata %s: key added twice", key))
		return
	}
	nv, ok := gguf.NewValue(v.Raw()) // the Go type decides; v.Type may not be trusted
	if !ok {
		w.fail(fmt.Errorf("add metadata %s: unsupported value %T", key, v.Raw()))
		return
	}
	w.keys = append(w.keys, key)
	w.kv[key] = nv
}

// Add adds a metadata value of any Go type NewValue accepts (a scalar or a slice).
func (w *Writer) Add(key string, x any) {
	v, ok := gguf.NewValue(x)
	if !ok {
		w.fail(fmt.Errorf("add metadata %s: unsupported Go type %T", key, x))
		return
	}
	w.AddValue(key, v)
}

// AddUint8 adds a uint8 value.
func (w *Writer) AddUint8(key string, v uint8) { w.Add(key, v) }

// AddInt8 adds an int8 value.
func (w *Writer) AddInt8(key string, v int8) { w.Add(key, v) }

// AddUint16 adds a uint16 value.
func (w *Writer) AddUint16(key string, v uint16) { w.Add(key, v) }

// AddInt16 adds an int16 value.
func (w *Writer) AddInt16(key string, v int16) { w.Add(key, v) }

// AddUint32 adds a uint32 value.
func (w *Writer) AddUint32(key string, v uint32) { w.Add(key, v) }

// AddInt32 adds an int32 value.
func (w *Writer) AddInt32(key string, v int32) { w.Add(key, v) }

// AddUint64 adds a uint64 value.
func (w *Writer) AddUint64(key string, v uint64) { w.Add(key, v) }

// AddInt64 adds an int64 value.
func (w *Writer) AddInt64(key string, v int64) { w.Add(key, v) }

// AddFloat32 adds a float32 value.
func (w *Writer) AddFloat32(key string, v float32) { w.Add(key, v) }

// AddFloat64 adds a float64 value.
func (w *Writer) AddFloat64(key string, v float64) { w.Add(key, v) }

// AddBool adds a bool value.
func (w *Writer) AddBool(key string, v bool) { w.Add(key, v) }

// AddString adds a string value.
func (w *Writer) AddString(key, v string) { w.Add(key, v) }

// AddStrings adds an array of strings.
func (w *Writer) AddStrings(key string, v []string) { w.Add(key, v) }

// AddFloat32s adds an array of float32s.
func (w *Writer) AddFloat32s(key string, v []float32) { w.Add(key, v) }

// AddInt32s adds an array of int32s.
func (w *Writer) AddInt32s(key string, v []int32) { w.Add(key, v) }

// AddUint32s adds an array of uint32s.
func (w *Writer) AddUint32s(key string, v []uint32) { w.Add(key, v) }

// AddArray adds an array given as a Go slice of any element type NewValue accepts.
func (w *Writer) AddArray(key string, slice any) {
	if v, ok := gguf.NewValue(slice); !ok || !v.IsArray() {
		w.fail(fmt.Errorf("add metadata %s: %T is not a supported array type", key, slice))
		return
	}
	w.Add(key, slice)
}

// AddTensor adds a tensor of ggml type typ whose encoded data is data.
func (w *Writer) AddTensor(name string, typ uint32, dims []uint64, data []byte) {
	w.addTensor(name, typ, dims, data, nil)
}

// AddTensorFunc adds a tensor whose data write produces while the file is written. write
// must write exactly the tensor's size in bytes.
func (w *Writer) AddTensorFunc(name string, typ uint32, dims []uint64, write func(io.Writer) error) {
	w.addTensor(name, typ, dims, nil, write)
}

// AddTensorF32 adds an F32 tensor. Dims are in ggml order (row length first).
func (w *Writer) AddTensorF32(name string, dims []uint64, data []float32) {
	b := make([]byte, 4*len(data))
	for i, x := range data {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	w.AddTensor(name, gguf.TypeF32, dims, b)
}

func (w *Writer) addTensor(name string, typ uint32, dims []uint64, data []byte, write func(io.Writer) error) {
	switch {
	case name == "" || len(name) > gguf.MaxNameLen:
		w.fail(fmt.Errorf("add tensor %q: name must be 1 to %d bytes", name, gguf.MaxNameLen))
		return
	case w.names[name]:
		w.fail(fmt.Errorf("add tensor %s: name added twice", name))
		return
	}
	size, err := gguf.TensorBytes(typ, dims)
	if err != nil {
		w.fail(fmt.Errorf("add tensor %s: %w", name, err))
		return
	}
	if write == nil && int64(len(data)) != size {
		w.fail(fmt.Errorf("add tensor %s: %d bytes of data, shape %v of type %s needs %d",
			name, len(data), dims, gguf.TypeName(typ), size))
		return
	}
	w.names[name] = true
	w.tensors = append(w.tensors, writerTensor{
		info:  gguf.TensorInfo{Name: name, Dims: append([]uint64(nil), dims...), Type: typ, Size: size},
		data:  data,
		write: write,
	})
}

func (w *Writer) alignment() (int64, error) {
	v, ok := w.kv["general.alignment"]
	if !ok {
		return gguf.DefaultAlignment, nil
	}
	a, ok := v.Raw().(uint32)
	if !ok || a == 0 || a&(a-1) != 0 {
		return 0, fmt.Errorf("general.alignment must be a uint32 power of two, not %s", v)
	}
	return int64(a), nil
}

func alignUp(n, a int64) int64 { return (n + a - 1) / a * a }

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// WriteTo writes the file to out and returns the number of bytes written.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	if w.err != nil {
		return 0, w.err
	}
	align, err := w.alignment()
	if err != nil {
		return 0, err
	}
	cw := &countingWriter{w: out}
	bw := bufio.NewWriterSize(cw, 1<<20)
	e := encoder{w: bw}

	e.raw([]byte(gguf.Magic))
	e.u32(3)
	e.u64(uint64(len(w.tensors)))
	e.u64(uint64(len(w.keys)))
	for _, k := range w.keys {
		e.str(k)
		e.value(w.kv[k])
	}
	offset := int64(0)
	for _, t := range w.tensors {
		e.str(t.info.Name)
		e.u32(uint32(len(t.info.Dims)))
		for _, d := range t.info.Dims {
			e.u64(d)
		}
		e.u32(t.info.Type)
		e.u64(uint64(offset))
		offset = alignUp(offset+t.info.Size, align)
	}
	pos := e.n
	e.raw(make([]byte, alignUp(pos, align)-pos))
	if e.err != nil {
		return cw.n, e.err
	}

	pad := make([]byte, align)
	for _, t := range w.tensors {
		if t.write == nil {
			if _, err := bw.Write(t.data); err != nil {
				return cw.n, err
			}
		} else {
			tw := &countingWriter{w: bw}
			if err := t.write(tw); err != nil {
				return cw.n, fmt.Errorf("write tensor %s: %w", t.info.Name, err)
			}
			if tw.n != t.info.Size {
				return cw.n, fmt.Errorf("write tensor %s: wrote %d bytes, expected %d", t.info.Name, tw.n, t.info.Size)
			}
		}
		if _, err := bw.Write(pad[:alignUp(t.info.Size, align)-t.info.Size]); err != nil {
			return cw.n, err
		}
	}
	err = bw.Flush()
	return cw.n, err
}

// WriteFile writes the file to path. It writes a temporary file beside path and renames it
// into place, so path never holds a partial model.
func (w *Writer) WriteFile(path string) (err error) {
	if w.err != nil {
		return w.err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write model: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("write model: %w", err)
	}
	if _, err = w.WriteTo(tmp); err != nil {
		return fmt.Errorf("write model %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("write model %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write model: %w", err)
	}
	return nil
}

// encoder writes little-endian GGUF primitives, keeping the first error.
type encoder struct {
	w   io.Writer
	n   int64
	err error
	buf [8]byte
}

func (e *encoder) raw(p []byte) {
	if e.err != nil {
		return
	}
	n, err := e.w.Write(p)
	e.n += int64(n)
	e.err = err
}

func (e *encoder) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.buf[:4], v)
	e.raw(e.buf[:4])
}

func (e *encoder) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.buf[:8], v)
	e.raw(e.buf[:8])
}

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	if e.err == nil {
		n, err := io.WriteString(e.w, s)
		e.n += int64(n)
		e.err = err
	}
}

func (e *encoder) value(v gguf.Value) {
	e.u32(uint32(v.Type))
	if v.Type != gguf.ValueArray {
		e.scalar(v.Raw())
		return
	}
	e.u32(uint32(v.Elem))
	e.u64(uint64(v.Len()))
	if s, ok := v.Raw().([]string); ok {
		for _, x := range s {
			e.str(x)
		}
		return
	}
	if b, ok := v.Raw().([]uint8); ok {
		e.raw(b)
		return
	}
	elems := reflect.ValueOf(v.Raw())
	for i := range v.Len() {
		e.scalar(elems.Index(i).Interface())
	}
}

func (e *encoder) scalar(x any) {
	le := binary.LittleEndian
	b := e.buf[:]
	switch x := x.(type) {
	case uint8:
		e.raw([]byte{x})
	case int8:
		e.raw([]byte{byte(x)})
	case bool:
		if x {
			e.raw([]byte{1})
		} else {
			e.raw([]byte{0})
		}
	case uint16:
		le.PutUint16(b, x)
		e.raw(b[:2])
	case int16:
		le.PutUint16(b, uint16(x))
		e.raw(b[:2])
	case uint32:
		e.u32(x)
	case int32:
		e.u32(uint32(x))
	case float32:
		e.u32(math.Float32bits(x))
	case uint64:
		e.u64(x)
	case int64:
		e.u64(uint64(x))
	case float64:
		e.u64(math.Float64bits(x))
	case string:
		e.str(x)
	default:
		if e.err == nil {
			e.err = errors.New("gguf: cannot encode " + fmt.Sprintf("%T", x))
		}
	}
}
