package gguf

import (
	"fmt"
	"math"
	"strconv"
)

// ValueType is the type of a GGUF metadata value, as stored in the file.
type ValueType uint32

// The GGUF metadata value types. The numbers are the file format's.
const (
	ValueUint8   ValueType = 0
	ValueInt8    ValueType = 1
	ValueUint16  ValueType = 2
	ValueInt16   ValueType = 3
	ValueUint32  ValueType = 4
	ValueInt32   ValueType = 5
	ValueFloat32 ValueType = 6
	ValueBool    ValueType = 7
	ValueString  ValueType = 8
	ValueArray   ValueType = 9
	ValueUint64  ValueType = 10
	ValueInt64   ValueType = 11
	ValueFloat64 ValueType = 12
)

var valueTypeNames = [...]string{
	"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
	"bool", "string", "array", "uint64", "int64", "float64",
}

// String returns the type's name as the GGUF specification spells it.
func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return "type(" + strconv.FormatUint(uint64(t), 10) + ")"
}

// valid reports whether t is a type the format defines.
func (t ValueType) valid() bool { return t <= ValueFloat64 }

// size returns the encoded size of a value of type t: exact for fixed-size types, the
// minimum (an empty string's length prefix) for strings, and 0 for arrays.
func (t ValueType) size() int64 {
	switch t {
	case ValueUint8, ValueInt8, ValueBool:
		return 1
	case ValueUint16, ValueInt16:
		return 2
	case ValueUint32, ValueInt32, ValueFloat32:
		return 4
	case ValueUint64, ValueInt64, ValueFloat64, ValueString:
		return 8
	}
	return 0
}

// The ggml tensor types (TensorInfo.Type). The numbers are ggml's.
const (
	TypeF32     uint32 = 0
	TypeF16     uint32 = 1
	TypeQ4_0    uint32 = 2
	TypeQ4_1    uint32 = 3
	TypeQ5_0    uint32 = 6
	TypeQ5_1    uint32 = 7
	TypeQ8_0    uint32 = 8
	TypeQ8_1    uint32 = 9
	TypeQ2_K    uint32 = 10
	TypeQ3_K    uint32 = 11
	TypeQ4_K    uint32 = 12
	TypeQ5_K    uint32 = 13
	TypeQ6_K    uint32 = 14
	TypeQ8_K    uint32 = 15
	TypeIQ2_XXS uint32 = 16
	TypeIQ2_XS  uint32 = 17
	TypeIQ3_XXS uint32 = 18
	TypeIQ1_S   uint32 = 19
	TypeIQ4_NL  uint32 = 20
	TypeIQ3_S   uint32 = 21
	TypeIQ2_S   uint32 = 22
	TypeIQ4_XS  uint32 = 23
	TypeI8      uint32 = 24
	TypeI16     uint32 = 25
	TypeI32     uint32 = 26
	TypeI64     uint32 = 27
	TypeF64     uint32 = 28
	TypeIQ1_M   uint32 = 29
	TypeBF16    uint32 = 30
	TypeTQ1_0   uint32 = 34
	TypeTQ2_0   uint32 = 35
	TypeMXFP4   uint32 = 39
)

type typeTraits struct {
	name      string
	blockSize int64 // elements per block
	typeSize  int64 // bytes per block
}

// ggmlTypes holds the block layout of every tensor type the pinned ggml can load (ggml.c's
// type_traits and the block structs in ggml-common.h). Removed types are absent.
var ggmlTypes = map[uint32]typeTraits{
	TypeF32:     {"F32", 1, 4},
	TypeF16:     {"F16", 1, 2},
	TypeQ4_0:    {"Q4_0", 32, 18},
	TypeQ4_1:    {"Q4_1", 32, 20},
	TypeQ5_0:    {"Q5_0", 32, 22},
	TypeQ5_1:    {"Q5_1", 32, 24},
	TypeQ8_0:    {"Q8_0", 32, 34},
	TypeQ8_1:    {"Q8_1", 32, 36},
	TypeQ2_K:    {"Q2_K", 256, 84},
	TypeQ3_K:    {"Q3_K", 256, 110},
	TypeQ4_K:    {"Q4_K", 256, 144},
	TypeQ5_K:    {"Q5_K", 256, 176},
	TypeQ6_K:    {"Q6_K", 256, 210},
	TypeQ8_K:    {"Q8_K", 256, 292},
	TypeIQ2_XXS: {"IQ2_XXS", 256, 66},
	TypeIQ2_XS:  {"IQ2_XS", 256, 74},
	TypeIQ3_XXS: {"IQ3_XXS", 256, 98},
	TypeIQ1_S:   {"IQ1_S", 256, 50},
	TypeIQ4_NL:  {"IQ4_NL", 32, 18},
	TypeIQ3_S:   {"IQ3_S", 256, 110},
	TypeIQ2_S:   {"IQ2_S", 256, 82},
	TypeIQ4_XS:  {"IQ4_XS", 256, 136},
	TypeI8:      {"I8", 1, 1},
	TypeI16:     {"I16", 1, 2},
	TypeI32:     {"I32", 1, 4},
	TypeI64:     {"I64", 1, 8},
	TypeF64:     {"F64", 1, 8},
	TypeIQ1_M:   {"IQ1_M", 256, 56},
	TypeBF16:    {"BF16", 1, 2},
	TypeTQ1_0:   {"TQ1_0", 256, 54},
	TypeTQ2_0:   {"TQ2_0", 256, 66},
	TypeMXFP4:   {"MXFP4", 32, 17},
}

// TypeName returns the ggml name of a tensor type ("Q8_0"), or "type(N)" for an unknown one.
func TypeName(t uint32) string {
	if tt, ok := ggmlTypes[t]; ok {
		return tt.name
	}
	return "type(" + strconv.FormatUint(uint64(t), 10) + ")"
}

// TypeBlock returns a tensor type's block layout: elements per block and bytes per block.
// It reports false for types ggml cannot load.
func TypeBlock(t uint32) (blockSize, blockBytes int64, ok bool) {
	tt, ok := ggmlTypes[t]
	return tt.blockSize, tt.typeSize, ok
}

// TensorBytes returns the byte size of a tensor of type t and shape dims, or an error that
// says why the shape does not fit the type.
func TensorBytes(t uint32, dims []uint64) (int64, error) {
	tt, ok := ggmlTypes[t]
	if !ok {
		return 0, fmt.Errorf("unknown tensor type %d", t)
	}
	if len(dims) > maxDims {
		return 0, fmt.Errorf("%d dimensions, at most %d allowed", len(dims), maxDims)
	}
	elems := uint64(1)
	for i, d := range dims {
		if d == 0 {
			return 0, fmt.Errorf("dimension %d is zero", i)
		}
		if d > math.MaxInt64/elems {
			return 0, fmt.Errorf("shape %v has too many elements", dims)
		}
		elems *= d
	}
	row := uint64(1)
	if len(dims) > 0 {
		row = dims[0]
	}
	if row%uint64(tt.blockSize) != 0 {
		return 0, fmt.Errorf("type %s needs rows of a multiple of %d elements, but the row has %d",
			tt.name, tt.blockSize, row)
	}
	blocks := elems / uint64(tt.blockSize)
	if blocks > math.MaxInt64/uint64(tt.typeSize) {
		return 0, fmt.Errorf("shape %v is too large", dims)
	}
	return int64(blocks) * tt.typeSize, nil
}

// maxDims is ggml's GGML_MAX_DIMS.
const maxDims = 4
