package gguf

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Value is one metadata value. Type is its GGUF type; for arrays Elem is the element type.
// The payload is read with the accessors, each of which reports whether the value has a
// fitting type.
type Value struct {
	Type ValueType
	Elem ValueType // element type when Type is ValueArray
	v    any       // uint8..float64, bool, string, or a slice of one of them
}

// Raw returns the value as a Go value: uint8, int8, uint16, int16, uint32, int32, float32,
// bool, string, uint64, int64, float64, or, for arrays, a slice of one of those. Arrays are
// not copied; callers must not modify them.
func (v Value) Raw() any { return v.v }

// IsArray reports whether v is an array.
func (v Value) IsArray() bool { return v.Type == ValueArray }

// Len returns the number of elements of an array value, and 0 for scalars.
func (v Value) Len() int {
	switch a := v.v.(type) {
	case []uint8:
		return len(a)
	case []int8:
		return len(a)
	case []uint16:
		return len(a)
	case []int16:
		return len(a)
	case []uint32:
		return len(a)
	case []int32:
		return len(a)
	case []float32:
		return len(a)
	case []bool:
		return len(a)
	case []string:
		return len(a)
	case []uint64:
		return len(a)
	case []int64:
		return len(a)
	case []float64:
		return len(a)
	}
	return 0
}

// Uint returns an integer scalar as uint64; it reports false for other types and for
// negative values.
func (v Value) Uint() (uint64, bool) {
	switch x := v.v.(type) {
	case uint8:
		return uint64(x), true
	case uint16:
		return uint64(x), true
	case uint32:
		return uint64(x), true
	case uint64:
		return x, true
	}
	if i, ok := v.Int(); ok && i >= 0 {
		return uint64(i), true
	}
	return 0, false
}

// Int returns an integer scalar as int64; it reports false for other types and for
// unsigned values above math.MaxInt64.
func (v Value) Int() (int64, bool) {
	switch x := v.v.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), true
		}
	}
	return 0, false
}

// Float returns a float or integer scalar as float64.
func (v Value) Float() (float64, bool) {
	switch x := v.v.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	if i, ok := v.Int(); ok {
		return float64(i), true
	}
	if u, ok := v.Uint(); ok {
		return float64(u), true
	}
	return 0, false
}

// Bool returns a bool scalar.
func (v Value) Bool() (bool, bool) {
	b, ok := v.v.(bool)
	return b, ok
}

// Text returns a string scalar.
func (v Value) Text() (string, bool) {
	s, ok := v.v.(string)
	return s, ok
}

// Strings returns an array of strings. The slice is not copied.
func (v Value) Strings() ([]string, bool) {
	s, ok := v.v.([]string)
	return s, ok
}

// Ints returns an array of any integer type as int64s (a copy); it reports false for
// other types and for uint64 elements above math.MaxInt64.
func (v Value) Ints() ([]int64, bool) {
	n := v.Len()
	out := make([]int64, n)
	switch a := v.v.(type) {
	case []uint8:
		for i, x := range a {
			out[i] = int64(x)
		}
	case []int8:
		for i, x := range a {
			out[i] = int64(x)
		}
	case []uint16:
		for i, x := range a {
			out[i] = int64(x)
		}
	case []int16:
		for i, x := range a {
			out[i] = int64(x)
		}
	case []uint32:
		for i, x := range a {
			out[i] = int64(x)
		}
	case []int32:
		for i, x := range a {
			out[i] = int64(x)
		}
	case []int64:
		copy(out, a)
	case []uint64:
		for i, x := range a {
			if x > math.MaxInt64 {
				return nil, false
			}
			out[i] = int64(x)
		}
	default:
		return nil, false
	}
	return out, true
}

// Floats returns an array of floats or integers as float64s (a copy).
func (v Value) Floats() ([]float64, bool) {
	switch a := v.v.(type) {
	case []float32:
		out := make([]float64, len(a))
		for i, x := range a {
			out[i] = float64(x)
		}
		return out, true
	case []float64:
		return append([]float64(nil), a...), true
	}
	ints, ok := v.Ints()
	if !ok {
		return nil, false
	}
	out := make([]float64, len(ints))
	for i, x := range ints {
		out[i] = float64(x)
	}
	return out, true
}

// String formats the value for display; long arrays and strings are shortened.
func (v Value) String() string {
	if v.Type == ValueArray {
		const show = 8
		var b strings.Builder
		fmt.Fprintf(&b, "[%d]%s{", v.Len(), v.Elem)
		for i := 0; i < v.Len() && i < show; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(formatScalar(indexAny(v.v, i)))
		}
		if v.Len() > show {
			b.WriteString(", ...")
		}
		b.WriteString("}")
		return b.String()
	}
	return formatScalar(v.v)
}

func formatScalar(x any) string {
	if s, ok := x.(string); ok {
		if len(s) > 80 {
			s = s[:77] + "..."
		}
		return strconv.Quote(s)
	}
	return fmt.Sprint(x)
}

func indexAny(a any, i int) any {
	switch a := a.(type) {
	case []uint8:
		return a[i]
	case []int8:
		return a[i]
	case []uint16:
		return a[i]
	case []int16:
		return a[i]
	case []uint32:
		return a[i]
	case []int32:
		return a[i]
	case []float32:
		return a[i]
	case []bool:
		return a[i]
	case []string:
		return a[i]
	case []uint64:
		return a[i]
	case []int64:
		return a[i]
	case []float64:
		return a[i]
	}
	return nil
}

// scalarType returns the GGUF type of a Go scalar, and whether it is one.
func scalarType(x any) (ValueType, bool) {
	switch x.(type) {
	case uint8:
		return ValueUint8, true
	case int8:
		return ValueInt8, true
	case uint16:
		return ValueUint16, true
	case int16:
		return ValueInt16, true
	case uint32:
		return ValueUint32, true
	case int32:
		return ValueInt32, true
	case float32:
		return ValueFloat32, true
	case bool:
		return ValueBool, true
	case string:
		return ValueString, true
	case uint64:
		return ValueUint64, true
	case int64:
		return ValueInt64, true
	case float64:
		return ValueFloat64, true
	}
	return 0, false
}

// arrayType returns the GGUF element type of a Go slice, and whether it is a supported one.
func arrayType(x any) (ValueType, bool) {
	switch x.(type) {
	case []uint8:
		return ValueUint8, true
	case []int8:
		return ValueInt8, true
	case []uint16:
		return ValueUint16, true
	case []int16:
		return ValueInt16, true
	case []uint32:
		return ValueUint32, true
	case []int32:
		return ValueInt32, true
	case []float32:
		return ValueFloat32, true
	case []bool:
		return ValueBool, true
	case []string:
		return ValueString, true
	case []uint64:
		return ValueUint64, true
	case []int64:
		return ValueInt64, true
	case []float64:
		return ValueFloat64, true
	}
	return 0, false
}

// NewValue makes a Value from a Go scalar or slice of the kinds Raw returns; it reports
// false for any other Go type.
func NewValue(x any) (Value, bool) {
	if t, ok := scalarType(x); ok {
		return Value{Type: t, v: x}, true
	}
	if t, ok := arrayType(x); ok {
		return Value{Type: ValueArray, Elem: t, v: x}, true
	}
	return Value{}, false
}
