package models

import (
	"errors"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

// TestCheckName: names that reach outside the catalog are refused with ErrInvalidInput, the
// rest pass, and no name panics (FuzzChat found "0:", a name of two bytes with a colon second,
// indexing past its end).
func TestCheckName(t *testing.T) {
	for _, bad := range []string{"", "/etc/passwd", `\\server\share`, "C:/models/x.gguf", `C:\x`, "a/../b", "./x", "a\x00b", "a\nb"} {
		if err := CheckName(bad); !errors.Is(err, llm.ErrInvalidInput) {
			t.Errorf("CheckName(%q) = %v, want ErrInvalidInput", bad, err)
		}
	}
	for _, good := range []string{"0:", "C:", "q:", "llama3:8b", "hf.co/unsloth/Qwen3-GGUF:Q4_K_M", "a:b/c"} {
		if err := CheckName(good); err != nil {
			t.Errorf("CheckName(%q) = %v, want nil", good, err)
		}
	}
}
