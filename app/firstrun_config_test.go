package app

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/superfluid/superfluid/app/desktop"
	"github.com/superfluid/superfluid/runtime/models"
)

// TestModelsDirSetting: the models folder is <data>/models on a fresh data dir, the folder the
// desktop app moved the models to at the next start, and --models-dir over both.
func TestModelsDirSetting(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	dirAt := func(cfg Config) string {
		t.Helper()
		l, err := openLibrary(cfg, models.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.mgr.Catalog().Dir()
	}
	if got := dirAt(cfg); got != modelsDir(cfg.DataDir) {
		t.Fatalf("fresh: %s", got)
	}
	moved := filepath.Join(t.TempDir(), "moved")
	l, err := openLibrary(cfg, models.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.store.SetAppSetting(context.Background(), desktop.SettingModelsDir, moved); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if got := dirAt(cfg); got != moved {
		t.Fatalf("after a move: %s, want %s", got, moved)
	}
	cfg.ModelsDir = filepath.Join(t.TempDir(), "flag")
	if got := dirAt(cfg); got != cfg.ModelsDir {
		t.Fatalf("with --models-dir: %s, want %s", got, cfg.ModelsDir)
	}
}
