package gguf

// Internals for the external tests (package gguf_test, which imports gguftest's writer: an
// internal test would make an import cycle).

var (
	AlignUp   = alignUp
	ArrayType = arrayType
)

// UntypedValue is a Value holding x with no type set, as one made by hand would be.
func UntypedValue(x any) Value { return Value{v: x} }

// IndexedTensors is how many tensors f's index by name holds.
func IndexedTensors(f *File) int { return len(f.tensorIndex) }
