package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func TestModelCatalogRows(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	added := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	want := ModelRecord{
		ID: "hf.co/owner/repo:Q4_K_M", Path: "/data/models/x.gguf", Source: SourceHuggingFace,
		Repo: "owner/repo", File: "x-Q4_K_M.gguf", Revision: "main", SHA256: "ab12", Size: 42,
		Architecture: "llama", ParameterCount: 260000, Quantization: "Q4_K_M", ContextLength: 2048,
		Capabilities: []string{"completion", "insert"}, AddedAt: added,
	}
	if err := s.PutModel(ctx, want); err != nil {
		t.Fatal(err)
	}
	if err := s.PutModel(ctx, ModelRecord{ID: "bad", Path: "/x", Source: "nowhere"}); err == nil {
		t.Fatal("an unknown source was stored")
	}
	used := added.Add(time.Hour)
	if err := s.TouchModel(ctx, want.ID, used); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// Reopened: the row survives with every column.
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Models(ctx)
	if err != nil || len(got) != 1 {
		t.Fatalf("Models = %v, %v", got, err)
	}
	want.LastUsedAt = used
	g := got[0]
	if g.ID != want.ID || g.Path != want.Path || g.Source != want.Source || g.Repo != want.Repo || g.File != want.File ||
		g.Revision != want.Revision || g.SHA256 != want.SHA256 || g.Size != want.Size || g.Architecture != want.Architecture ||
		g.ParameterCount != want.ParameterCount || g.Quantization != want.Quantization || g.ContextLength != want.ContextLength ||
		len(g.Capabilities) != 2 || g.Capabilities[1] != "insert" || !g.AddedAt.Equal(added) || !g.LastUsedAt.Equal(used) {
		t.Fatalf("row = %+v\nwant  %+v", g, want)
	}
	if err := s.DeleteModel(ctx, want.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteModel(ctx, want.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v, want ErrNotFound", err)
	}
}
