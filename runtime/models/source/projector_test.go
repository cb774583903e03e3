package source

import (
	"slices"
	"testing"
)

func TestRankProjectors(t *testing.T) {
	names := []string{"mmproj-x-f32.gguf", "mmproj-x-BF16.gguf", "mmproj-x-F16.gguf", "mmproj-x-Q8_0.gguf", "a/mmproj.gguf"}
	tests := []struct {
		quant string
		want  []string
	}{
		{"Q8_0", []string{"mmproj-x-Q8_0.gguf", "mmproj-x-F16.gguf", "mmproj-x-BF16.gguf", "a/mmproj.gguf", "mmproj-x-f32.gguf"}},
		{"Q4_K_M", []string{"mmproj-x-F16.gguf", "mmproj-x-BF16.gguf", "a/mmproj.gguf", "mmproj-x-Q8_0.gguf", "mmproj-x-f32.gguf"}},
	}
	for _, tt := range tests {
		if got := RankProjectors(names, tt.quant); !slices.Equal(got, tt.want) {
			t.Errorf("RankProjectors(%s) = %q, want %q", tt.quant, got, tt.want)
		}
	}
	for name, want := range map[string]bool{"mmproj-F16.gguf": true, "Model-MMPROJ-f16.gguf": true, "model-Q4.gguf": false, "mmproj.bin": false} {
		if IsProjectorName(name) != want {
			t.Errorf("IsProjectorName(%s) = %v", name, !want)
		}
	}
}
