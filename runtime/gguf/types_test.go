package gguf

import "testing"

func TestTypeBlock(t *testing.T) {
	// block sizes from the static_asserts in ggml-common.h
	cases := []struct {
		typ          uint32
		name         string
		block, bytes int64
	}{
		{TypeF32, "F32", 1, 4}, {TypeF16, "F16", 1, 2}, {TypeBF16, "BF16", 1, 2},
		{TypeQ4_0, "Q4_0", 32, 18}, {TypeQ4_1, "Q4_1", 32, 20}, {TypeQ5_0, "Q5_0", 32, 22},
		{TypeQ5_1, "Q5_1", 32, 24}, {TypeQ8_0, "Q8_0", 32, 34}, {TypeQ2_K, "Q2_K", 256, 84},
		{TypeQ3_K, "Q3_K", 256, 110}, {TypeQ4_K, "Q4_K", 256, 144}, {TypeQ5_K, "Q5_K", 256, 176},
		{TypeQ6_K, "Q6_K", 256, 210}, {TypeQ8_K, "Q8_K", 256, 292}, {TypeIQ2_XXS, "IQ2_XXS", 256, 66},
		{TypeIQ3_S, "IQ3_S", 256, 110}, {TypeIQ4_NL, "IQ4_NL", 32, 18}, {TypeIQ1_M, "IQ1_M", 256, 56},
		{TypeTQ1_0, "TQ1_0", 256, 54}, {TypeMXFP4, "MXFP4", 32, 17},
	}
	for _, c := range cases {
		block, bytes, ok := TypeBlock(c.typ)
		if !ok || block != c.block || bytes != c.bytes || TypeName(c.typ) != c.name {
			t.Errorf("type %d: %s %d %d %v, want %s %d %d", c.typ, TypeName(c.typ), block, bytes, ok, c.name, c.block, c.bytes)
		}
	}
	for _, removed := range []uint32{4, 5, 31, 32, 33, 36, 37, 38, 40} {
		if _, _, ok := TypeBlock(removed); ok {
			t.Errorf("type %d is sized", removed)
		}
	}
	if TypeName(99) != "type(99)" || ValueType(99).String() != "type(99)" || ValueFloat64.String() != "float64" {
		t.Error("names of unknown types")
	}
	if n, err := TensorBytes(TypeQ4_K, []uint64{512, 3}); err != nil || n != 6*144 {
		t.Errorf("Q4_K [512 3] = %d, %v", n, err)
	}
}
