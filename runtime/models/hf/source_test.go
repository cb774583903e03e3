package hf_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models/hf"
	"github.com/superfluid/superfluid/runtime/models/hf/hftest"
	"github.com/superfluid/superfluid/runtime/models/source"
)

var _ source.Source = (*hf.Source)(nil)

// TestSource: the Hub as a model source reads references as ParseRef does (an Ollama library
// name is no reference of it), resolves to a pinned folder and an Ollama-style id, downloads
// with progress, and answers errors in the kinds source.Source promises.
func TestSource(t *testing.T) {
	ctx := context.Background()
	hub := hftest.New()
	defer hub.Close()
	const commit = "0123456789abcdef0123456789abcdef01234567"
	hub.AddFile("owner/repo-GGUF", "repo-Q8_0.gguf", []byte("GGUF bytes"))
	hub.SetCommit("owner/repo-GGUF", commit)
	src := hf.NewSource(hf.Config{Endpoint: hub.URL(), Backoff: 1})

	if _, err := src.Parse("llama3.2"); !errors.Is(err, source.ErrNotReference) || !errors.Is(err, hf.ErrNotHuggingFace) {
		t.Errorf("Parse of an Ollama library name: %v", err)
	}
	if _, err := src.Parse("owner/repo/README.md"); err == nil || errors.Is(err, source.ErrNotReference) || !errors.Is(err, hf.ErrBadRef) {
		t.Errorf("Parse of a malformed reference: %v", err)
	}
	ref, err := src.Parse("hf.co/owner/repo-GGUF:Q8_0")
	if err != nil || ref != (source.Reference{Source: hf.SourceName, Repo: "owner/repo-GGUF", Quant: "Q8_0"}) {
		t.Fatalf("Parse = %+v, %v", ref, err)
	}
	res, err := src.Resolve(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if res.ID != "hf.co/owner/repo-GGUF:Q8_0" || res.Revision != commit || res.Folder != "hf/owner/repo-GGUF/"+commit ||
		len(res.Files) != 1 || res.Files[0].Path != "repo-Q8_0.gguf" || res.Files[0].SHA256 != hub.SHA256("owner/repo-GGUF", "repo-Q8_0.gguf") {
		t.Fatalf("Resolve = %+v", res)
	}
	dir := t.TempDir()
	var last source.Progress
	paths, err := src.Download(ctx, res, dir, func(p source.Progress) { last = p })
	if err != nil || len(paths) != 1 || paths[0] != filepath.Join(dir, "repo-Q8_0.gguf") || last.Status != source.StatusDone {
		t.Fatalf("Download = %v, %v; last progress %+v", paths, err, last)
	}

	for _, tt := range []struct {
		ref  string
		kind error
		text string
	}{
		{"nobody/nothing", llm.ErrModelNotFound, "not found on Hugging Face"},
		{"owner/repo-GGUF:Q5_K_M", llm.ErrInvalidInput, "has no Q5_K_M quant"},
	} {
		ref, err := src.Parse(tt.ref)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := src.Resolve(ctx, ref); !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.text) {
			t.Errorf("Resolve(%s) = %v; want %v with %q", tt.ref, err, tt.kind, tt.text)
		}
	}
	hub.SetCommit("owner/repo-GGUF", "..")
	if _, err := src.Resolve(ctx, ref); !errors.Is(err, llm.ErrEngineFailure) {
		t.Errorf("Resolve with a hostile commit: %v; want an engine failure", err)
	}
}
