package gguf

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

const (
	// Magic is the first four bytes of every GGUF file.
	Magic = "GGUF"
	// MaxNameLen is the longest tensor name: ggml's GGML_MAX_NAME less the terminating NUL.
	MaxNameLen = 63
	// minimal encoded sizes, used to bound counts by the bytes left in the file
	minKVSize     = 8 + 4 + 1     // key length, type, smallest value
	minTensorSize = 8 + 4 + 4 + 8 // name length, dims count, type, offset
)

// ReadFile opens a GGUF file and reads and validates its header, metadata and tensor
// directory. It does not read tensor data.
func ReadFile(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open model: %w", err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("open model: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("read model %s: not a regular file: %w", path, ErrNotGGUF)
	}
	f, err := Read(fh, st.Size())
	if err != nil {
		return nil, fmt.Errorf("read model %s: %w", path, err)
	}
	return f, nil
}

// Read reads and validates a GGUF file of size bytes from r. It does not read tensor data.
func Read(r io.ReaderAt, size int64) (*File, error) { return ReadPrefix(r, size, size) }

// ReadPrefix reads the header of a GGUF file of size bytes from its first have bytes in r (a
// Range read of a remote file). Counts and lengths are bounded by the bytes really there, so
// a header that lies cannot make it allocate more than have allows; the tensors are checked
// against size. A header longer than have fails as truncated.
func ReadPrefix(r io.ReaderAt, have, size int64) (*File, error) {
	if size < 0 || have < 0 {
		return nil, fmt.Errorf("negative file size %d: %w", min(size, have), ErrInvalid)
	}
	have = min(have, size)
	bufSize := int(min(max(have, 16), 64<<10)) // small files get small buffers
	d := &decoder{r: bufio.NewReaderSize(io.NewSectionReader(r, 0, have), bufSize), size: have}
	f := &File{FileSize: size, KV: map[string]Value{}, tensorIndex: map[string]int{}}
	if err := d.header(f); err != nil {
		return nil, err
	}
	return f, nil
}

// decoder reads the metadata section sequentially, tracking its position so that every
// length can be checked against the bytes that remain.
type decoder struct {
	r    *bufio.Reader
	pos  int64
	size int64 // the bytes the decoder may read (the file, or the prefix of it at hand)
	buf  [8]byte
}

func truncated(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, ErrTruncated)...)
}

func invalid(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, ErrInvalid)...)
}

func (d *decoder) remaining() int64 { return d.size - d.pos }

// read reads exactly len(p) bytes; what names the item for the error.
func (d *decoder) read(p []byte, what string) error {
	if int64(len(p)) > d.remaining() {
		return truncated("file ends inside %s", what)
	}
	n, err := io.ReadFull(d.r, p)
	d.pos += int64(n)
	if err != nil {
		return d.readErr(err, what)
	}
	return nil
}

// readErr turns a read error into ErrTruncated when the data ended early: the reader may
// hold fewer bytes than the size it was given.
func (d *decoder) readErr(err error, what string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return truncated("file ends inside %s", what)
	}
	return fmt.Errorf("read %s: %w", what, err)
}

func (d *decoder) u32(what string) (uint32, error) {
	if err := d.read(d.buf[:4], what); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(d.buf[:4]), nil
}

func (d *decoder) u64(what string) (uint64, error) {
	if err := d.read(d.buf[:8], what); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(d.buf[:8]), nil
}

func (d *decoder) str(what string) (string, error) {
	n, err := d.u64(what)
	if err != nil {
		return "", err
	}
	if n > uint64(d.remaining()) {
		return "", truncated("%s is %d bytes long but only %d bytes remain in the file", what, n, d.remaining())
	}
	if n <= uint64(d.r.Size()) { // the common case: copy straight out of the buffer
		p, err := d.r.Peek(int(n))
		if err != nil {
			return "", d.readErr(err, what)
		}
		s := string(p)
		d.r.Discard(int(n))
		d.pos += int64(n)
		return s, nil
	}
	b := make([]byte, n)
	if err := d.read(b, what); err != nil {
		return "", err
	}
	return string(b), nil
}

func (d *decoder) header(f *File) error {
	if err := d.magic(); err != nil {
		return err
	}
	v, err := d.u32("header")
	if err != nil {
		return err
	}
	f.Version = v
	switch {
	case v == 2 || v == 3:
	case v == 1:
		return invalid("GGUF version 1 is no longer supported; convert the model again with a current llama.cpp")
	case v&0xFFFF == 0:
		return invalid("GGUF version %#x looks byte-swapped; big-endian GGUF files are not supported", v)
	default:
		return invalid("unsupported GGUF version %d (versions 2 and 3 are supported)", v)
	}
	nTensors, err := d.u64("header")
	if err != nil {
		return err
	}
	nKV, err := d.u64("header")
	if err != nil {
		return err
	}
	// Every tensor info and every key/value has a minimal encoded size; counts that cannot fit
	// in the file are rejected before anything is allocated for them.
	rem := uint64(d.remaining())
	if nTensors > rem/minTensorSize || nKV > rem/minKVSize ||
		nTensors*minTensorSize+nKV*minKVSize > rem {
		return truncated("header lists %d tensors and %d metadata keys, more than the remaining %d bytes can hold",
			nTensors, nKV, rem)
	}
	f.Keys = make([]string, 0, nKV)
	for i := uint64(0); i < nKV; i++ {
		if err := d.kv(f); err != nil {
			return err
		}
	}
	if err := f.setAlignment(); err != nil {
		return err
	}
	f.Tensors = make([]TensorInfo, 0, nTensors)
	for i := uint64(0); i < nTensors; i++ {
		if err := d.tensorInfo(f); err != nil {
			return err
		}
	}
	f.DataOffset = alignUp(d.pos, f.Alignment)
	return f.checkTensorData()
}

func (d *decoder) magic() error {
	var m [4]byte
	n, err := io.ReadFull(d.r, m[:min(d.size, 4)])
	d.pos += int64(n)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("read magic: %w", err)
	}
	got := m[:n]
	switch {
	case n == 0:
		return fmt.Errorf("file is empty: %w", ErrNotGGUF)
	case n < 4 && bytes.HasPrefix([]byte(Magic), got):
		return truncated("file ends inside the magic number")
	case string(got) == Magic:
		return nil
	}
	var prefix [64]byte
	copy(prefix[:], got)
	k, _ := io.ReadFull(d.r, prefix[n:])
	return fmt.Errorf("%s: %w", describeNotGGUF(prefix[:n+k]), ErrNotGGUF)
}

// describeNotGGUF names what a non-GGUF file looks like, for a more useful message.
func describeNotGGUF(head []byte) string {
	lower := bytes.ToLower(head)
	switch {
	case bytes.HasPrefix(head, []byte("version https://git-lfs")):
		return "file is a Git LFS pointer, not the model itself"
	case bytes.HasPrefix(head, []byte("lmgg")), bytes.HasPrefix(head, []byte("fmgg")),
		bytes.HasPrefix(head, []byte("tjgg")):
		return "file is an old GGML/GGJT model; convert it to GGUF with llama.cpp"
	case bytes.Contains(lower, []byte("<html")), bytes.Contains(lower, []byte("<!doctype")):
		return "file is an HTML page (a failed download?)"
	case len(head) >= 8 && binary.LittleEndian.Uint64(head) < 1<<32 && bytes.Contains(head, []byte(`{"`)):
		return "file looks like safetensors; convert it to GGUF with llama.cpp"
	}
	return fmt.Sprintf("bad magic %q, expected \"GGUF\"", head[:min(4, len(head))])
}

func (d *decoder) kv(f *File) error {
	key, err := d.str("metadata key")
	if err != nil {
		return err
	}
	if _, dup := f.KV[key]; dup {
		return invalid("metadata key %q appears twice", key)
	}
	t, err := d.u32("type of metadata " + key)
	if err != nil {
		return err
	}
	v, err := d.value(key, ValueType(t))
	if err != nil {
		return err
	}
	f.Keys = append(f.Keys, key)
	f.KV[key] = v
	return nil
}

func (d *decoder) value(key string, t ValueType) (Value, error) {
	if !t.valid() {
		return Value{}, invalid("metadata %s has unknown type %d", key, uint32(t))
	}
	if t != ValueArray {
		x, err := d.scalar(key, t)
		return Value{Type: t, v: x}, err
	}
	et, err := d.u32("element type of metadata " + key)
	if err != nil {
		return Value{}, err
	}
	elem := ValueType(et)
	if !elem.valid() {
		return Value{}, invalid("metadata %s is an array of unknown type %d", key, et)
	}
	if elem == ValueArray {
		return Value{}, invalid("metadata %s is an array of arrays, which GGUF readers do not support", key)
	}
	n, err := d.u64("length of metadata " + key)
	if err != nil {
		return Value{}, err
	}
	if n > uint64(d.remaining())/uint64(elem.size()) {
		return Value{}, truncated("metadata %s is an array of %d %s values, more than the remaining %d bytes can hold",
			key, n, elem, d.remaining())
	}
	a, err := d.array(key, elem, int(n))
	return Value{Type: ValueArray, Elem: elem, v: a}, err
}

func (d *decoder) scalar(key string, t ValueType) (any, error) {
	what := "metadata " + key
	if t == ValueString {
		return d.str(what)
	}
	b := d.buf[:t.size()]
	if err := d.read(b, what); err != nil {
		return nil, err
	}
	return decodeScalar(t, b), nil
}

func decodeScalar(t ValueType, b []byte) any {
	le := binary.LittleEndian
	switch t {
	case ValueUint8:
		return b[0]
	case ValueInt8:
		return int8(b[0])
	case ValueBool:
		return b[0] != 0
	case ValueUint16:
		return le.Uint16(b)
	case ValueInt16:
		return int16(le.Uint16(b))
	case ValueUint32:
		return le.Uint32(b)
	case ValueInt32:
		return int32(le.Uint32(b))
	case ValueFloat32:
		return math.Float32frombits(le.Uint32(b))
	case ValueUint64:
		return le.Uint64(b)
	case ValueInt64:
		return int64(le.Uint64(b))
	case ValueFloat64:
		return math.Float64frombits(le.Uint64(b))
	}
	panic("gguf: decodeScalar of " + t.String())
}

// array reads n elements of type t; n has been bounded by the bytes left in the file.
func (d *decoder) array(key string, t ValueType, n int) (any, error) {
	what := "metadata " + key
	if t == ValueString {
		a := make([]string, n)
		for i := range a {
			s, err := d.str(what)
			if err != nil {
				return nil, err
			}
			a[i] = s
		}
		return a, nil
	}
	raw := make([]byte, int64(n)*t.size())
	if err := d.read(raw, what); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	switch t {
	case ValueUint8:
		return raw, nil
	case ValueInt8:
		return decodeArray(raw, 1, func(b []byte) int8 { return int8(b[0]) }), nil
	case ValueBool:
		return decodeArray(raw, 1, func(b []byte) bool { return b[0] != 0 }), nil
	case ValueUint16:
		return decodeArray(raw, 2, le.Uint16), nil
	case ValueInt16:
		return decodeArray(raw, 2, func(b []byte) int16 { return int16(le.Uint16(b)) }), nil
	case ValueUint32:
		return decodeArray(raw, 4, le.Uint32), nil
	case ValueInt32:
		return decodeArray(raw, 4, func(b []byte) int32 { return int32(le.Uint32(b)) }), nil
	case ValueFloat32:
		return decodeArray(raw, 4, func(b []byte) float32 { return math.Float32frombits(le.Uint32(b)) }), nil
	case ValueUint64:
		return decodeArray(raw, 8, le.Uint64), nil
	case ValueInt64:
		return decodeArray(raw, 8, func(b []byte) int64 { return int64(le.Uint64(b)) }), nil
	default: // ValueFloat64
		return decodeArray(raw, 8, func(b []byte) float64 { return math.Float64frombits(le.Uint64(b)) }), nil
	}
}

func decodeArray[T any](raw []byte, size int, conv func([]byte) T) []T {
	a := make([]T, len(raw)/size)
	for i := range a {
		a[i] = conv(raw[i*size:])
	}
	return a
}

// setAlignment applies general.alignment. llama.cpp reads it as a uint32 and aborts the
// process on any other type, so the type is checked here.
func (f *File) setAlignment() error {
	f.Alignment = DefaultAlignment
	v, ok := f.KV["general.alignment"]
	if !ok {
		return nil
	}
	a, ok := v.Raw().(uint32)
	if !ok {
		return invalid("general.alignment has type %s, expected uint32", v.Type)
	}
	if a == 0 || a&(a-1) != 0 {
		return invalid("general.alignment %d is not a power of two", a)
	}
	f.Alignment = int64(a)
	return nil
}

func (d *decoder) tensorInfo(f *File) error {
	name, err := d.str("tensor name")
	if err != nil {
		return err
	}
	switch {
	case name == "":
		return invalid("tensor %d has an empty name", len(f.Tensors))
	case len(name) > MaxNameLen:
		return invalid("tensor name %q is longer than %d bytes", name, MaxNameLen)
	}
	if _, dup := f.tensorIndex[name]; dup {
		return invalid("tensor %s appears twice", name)
	}
	what := "tensor " + name
	nDims, err := d.u32(what)
	if err != nil {
		return err
	}
	if nDims > maxDims {
		return invalid("tensor %s has %d dimensions, at most %d allowed", name, nDims, maxDims)
	}
	dims := make([]uint64, nDims)
	for i := range dims {
		if dims[i], err = d.u64(what); err != nil {
			return err
		}
	}
	typ, err := d.u32(what)
	if err != nil {
		return err
	}
	offset, err := d.u64(what)
	if err != nil {
		return err
	}
	if _, ok := ggmlTypes[typ]; !ok {
		return invalid("tensor %s has unknown type %d (not one this build of llama.cpp can load)", name, typ)
	}
	size, err := TensorBytes(typ, dims)
	if err != nil {
		return invalid("tensor %s: %v", name, err)
	}
	if offset%uint64(f.Alignment) != 0 {
		return invalid("tensor %s offset %d is not a multiple of the alignment %d", name, offset, f.Alignment)
	}
	f.tensorIndex[name] = len(f.Tensors)
	f.Tensors = append(f.Tensors, TensorInfo{Name: name, Dims: dims, Type: typ, Offset: offset, Size: size})
	return nil
}

// checkTensorData checks the data layout llama.cpp expects: tensors stored in order, each at
// the aligned end of the previous one, and all inside the file.
func (f *File) checkTensorData() error {
	if len(f.Tensors) > 0 && f.DataOffset > f.FileSize {
		return truncated("file ends before its tensor data begins")
	}
	next := uint64(0)
	for _, t := range f.Tensors {
		if t.Offset != next {
			return invalid("tensor %s is at offset %d, expected %d (tensor data must be stored in order without gaps)",
				t.Name, t.Offset, next)
		}
		end := uint64(f.DataOffset) + t.Offset + uint64(t.Size)
		if t.Offset > uint64(f.FileSize) || end > uint64(f.FileSize) {
			return truncated("tensor %s data extends past the end of the file (file is truncated?)", t.Name)
		}
		next = uint64(alignUp(int64(t.Offset)+t.Size, f.Alignment))
	}
	return nil
}

func alignUp(n, a int64) int64 { return (n + a - 1) / a * a }
