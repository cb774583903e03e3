package hf

import (
	"errors"
	"strings"
	"testing"
)

func TestParseRef(t *testing.T) {
	tests := []struct {
		in   string
		want Ref
	}{
		{"hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M", Ref{Repo: "bartowski/Llama-3.2-1B-Instruct-GGUF", Quant: "Q4_K_M"}},
		{"huggingface.co/unsloth/Qwen3-8B-GGUF:UD-Q4_K_XL", Ref{Repo: "unsloth/Qwen3-8B-GGUF", Quant: "UD-Q4_K_XL"}},
		{"HF.CO/Owner/Repo:q8_0", Ref{Repo: "Owner/Repo", Quant: "q8_0"}},
		{"https://huggingface.co/owner/repo", Ref{Repo: "owner/repo"}},
		{"https://huggingface.co/owner/repo/", Ref{Repo: "owner/repo"}},
		{"http://hf.co/owner/repo:Q4_0", Ref{Repo: "owner/repo", Quant: "Q4_0"}},
		{"https://huggingface.co/owner/repo/resolve/main/sub/m-Q4_0.gguf?download=true", Ref{Repo: "owner/repo", File: "sub/m-Q4_0.gguf"}},
		{"https://huggingface.co/owner/repo/blob/v1.0/m.gguf", Ref{Repo: "owner/repo", File: "m.gguf", Revision: "v1.0"}},
		{"https://huggingface.co/owner/repo/tree/dev", Ref{Repo: "owner/repo", Revision: "dev"}},
		{"owner/repo:Q4_K_M", Ref{Repo: "owner/repo", Quant: "Q4_K_M"}},
		{"owner/repo", Ref{Repo: "owner/repo"}},
		{"hf.co/owner/repo", Ref{Repo: "owner/repo"}},
		{"hf.co/owner/repo:latest", Ref{Repo: "owner/repo"}},
		{"  owner/repo  ", Ref{Repo: "owner/repo"}},
		{"owner/repo/model-q4.gguf", Ref{Repo: "owner/repo", File: "model-q4.gguf"}},
		{"owner/repo/Q4_K_M/deep/Model-Q4_K_M-00001-of-00003.gguf", Ref{Repo: "owner/repo", File: "Q4_K_M/deep/Model-Q4_K_M-00001-of-00003.gguf"}},
		{"owner/repo@abc123:Q8_0", Ref{Repo: "owner/repo", Quant: "Q8_0", Revision: "abc123"}},
		{"hf.co/owner/repo@v2/x.GGUF", Ref{Repo: "owner/repo", File: "x.GGUF", Revision: "v2"}},
		{"owner/repo@main", Ref{Repo: "owner/repo"}},
		{"my.org/my_repo-1.5", Ref{Repo: "my.org/my_repo-1.5"}},
	}
	for _, tt := range tests {
		got, err := ParseRef(tt.in)
		if err != nil {
			t.Errorf("ParseRef(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseRef(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
		// The canonical form parses back to the same reference.
		if back, err := ParseRef(got.String()); err != nil || back != got {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v", got.String(), back, err, got)
		}
	}
}

func TestParseRefString(t *testing.T) {
	tests := []struct {
		ref  Ref
		want string
	}{
		{Ref{Repo: "o/r"}, "hf.co/o/r"},
		{Ref{Repo: "o/r", Quant: "Q4_K_M"}, "hf.co/o/r:Q4_K_M"},
		{Ref{Repo: "o/r", File: "a/b.gguf", Revision: "v1"}, "hf.co/o/r@v1/a/b.gguf"},
	}
	for _, tt := range tests {
		if got := tt.ref.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.ref, got, tt.want)
		}
	}
}

func TestParseRefRejects(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"empty", "", ErrBadRef},
		{"blank", "   ", ErrBadRef},
		{"dotdot in file", "owner/repo/../../etc/passwd.gguf", ErrBadRef},
		{"dotdot as repo", "owner/..", ErrBadRef},
		{"dotdot as owner", "../repo", ErrBadRef},
		{"dot segment", "owner/repo/./x.gguf", ErrBadRef},
		{"absolute path", "/etc/models/x.gguf", ErrBadRef},
		{"absolute after host", "hf.co//owner/repo", ErrBadRef},
		{"NUL", "owner/re\x00po", ErrBadRef},
		{"control char", "owner/repo\x1b[31m", ErrBadRef},
		{"tab inside", "owner/\trepo", ErrBadRef},
		{"10 KB", "owner/" + strings.Repeat("a", 10<<10), ErrBadRef},
		{"513 bytes", "o/" + strings.Repeat("r", 511), ErrBadRef},
		{"bad char in owner", "own$er/repo", ErrBadRef},
		{"bad char in repo", "owner/re po", ErrBadRef},
		{"percent in repo", "owner/re%2fpo", ErrBadRef},
		{"backslash", `owner\repo/x.gguf`, ErrBadRef},
		{"non-ASCII", "owner/répo", ErrBadRef},
		{"file not gguf", "owner/repo/model.bin", ErrBadRef},
		{"file and quant", "owner/repo/model.gguf:Q4_0", ErrBadRef},
		{"bad quant", "owner/repo:Q4/K", ErrBadRef},
		{"empty quant", "owner/repo:", ErrBadRef},
		{"bad revision", "owner/repo@:Q4", ErrBadRef},
		{"empty segment", "owner//repo", ErrBadRef},
		{"host only", "hf.co/", ErrBadRef},
		{"host and owner only", "hf.co/owner", ErrBadRef},
		{"other host URL", "https://example.com/owner/repo", ErrBadRef},
		{"quant only", ":Q4_K_M", ErrBadRef},
		{"ollama name", "llama3.2", ErrNotHuggingFace},
		{"ollama name with tag", "llama3.2:1b", ErrNotHuggingFace},
		{"ollama latest", "qwen3:latest", ErrNotHuggingFace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseRef(tt.in)
			if !errors.Is(err, tt.want) {
				t.Fatalf("ParseRef(%q) = %+v, %v; want %v", tt.in, r, err, tt.want)
			}
			if len(err.Error()) > 400 {
				t.Errorf("error message is %d bytes long", len(err.Error()))
			}
		})
	}
	_, err := ParseRef("llama3.2")
	if !strings.Contains(err.Error(), "hf.co/OWNER/REPO:QUANT") {
		t.Errorf("ErrNotHuggingFace message %q does not say what is pulled", err)
	}
}
