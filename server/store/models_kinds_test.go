package store

import (
	"context"
	"database/sql"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/superfluid/superfluid/runtime/models"
)

// TestModelKindsMigration: a catalog written before migration 0022 opens with its rows intact
// (no projector, kind model), and the new columns round-trip.
func TestModelKindsMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "db")
	older := fstest.MapFS{}
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if strings.HasPrefix(filepath.Base(name), "0022_") {
			continue
		}
		body, err := fs.ReadFile(migrationFiles, name)
		if err != nil {
			t.Fatal(err)
		}
		older[name] = &fstest.MapFile{Data: body}
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := migrate(ctx, db, older); err != nil {
		t.Fatalf("migrate to 0021: %v", err)
	}
	if _, err := db.Exec(`INSERT INTO models (id, path, source, added_at) VALUES ('old', '/m/old.gguf', 'local', ?)`,
		formatTime(time.Now())); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s, err := Open(path)
	if err != nil {
		t.Fatalf("open a 0021 catalog: %v", err)
	}
	defer s.Close()
	rows, err := s.Models(ctx)
	if err != nil || len(rows) != 1 {
		t.Fatalf("Models after the migration = %+v, %v", rows, err)
	}
	if r := rows[0]; r.ID != "old" || r.Projector != "" || r.Kind != models.KindModel || r.BaseModel != "" {
		t.Errorf("old row after the migration = %+v", r)
	}
	model := ModelRecord{ID: "vis", Path: "/m/vis.gguf", Source: SourceLocal, Projector: "/m/mmproj-vis-F16.gguf",
		Capabilities: []string{"completion", "vision"}}
	adapter := ModelRecord{ID: "vis-lora", Path: "/m/vis-lora.gguf", Source: SourceLocal, Kind: models.KindAdapter, BaseModel: "vis"}
	for _, r := range []ModelRecord{model, adapter} {
		if err := s.PutModel(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutModel(ctx, ModelRecord{ID: "odd", Path: "/m/odd.gguf", Source: SourceLocal, Kind: "tokenizer"}); err == nil {
		t.Error("a kind the catalog does not know was stored")
	}
	rows, err = s.Models(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]ModelRecord{}
	for _, r := range rows {
		got[r.ID] = r
	}
	if g := got["vis"]; g.Projector != model.Projector || g.Kind != "" || len(g.Capabilities) != 2 || g.Capabilities[1] != "vision" {
		t.Errorf("model row = %+v", g)
	}
	if g := got["vis-lora"]; g.Kind != models.KindAdapter || g.BaseModel != "vis" || g.Projector != "" {
		t.Errorf("adapter row = %+v", g)
	}
}
