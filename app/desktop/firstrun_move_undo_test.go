package desktop_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/superfluid/superfluid/app/desktop"
)

// TestMoveModelsUndoesAFailedRelocate: when the catalog cannot be pointed at a model's new
// place (its store refuses the write) after its files were renamed there, the move fails and
// puts the files back: every model still loads from where the catalog says it is, in the old
// folder, and the new folder holds none of them.
func TestMoveModelsUndoesAFailedRelocate(t *testing.T) {
	c, cat, ids := withPulled(t)
	old := map[string]string{}
	for _, id := range append(ids, "one-alias") {
		old[id] = entry(t, cat, id).Path
	}
	renames := 0
	desktop.SetMoveHooks(c, func(from, to string) error {
		if err := os.Rename(from, to); err != nil {
			return err
		}
		if renames++; renames == 1 {
			cat.Store.Close() // the catalog's next write fails
		}
		return nil
	}, nil)
	dir := filepath.Join(t.TempDir(), "new")
	if err := c.MoveModels(context.Background(), dir, nil); err == nil {
		t.Fatal("the move succeeded with the catalog's store closed")
	}
	for id, path := range old {
		e := entry(t, cat, id)
		if e.Path != path {
			t.Errorf("%s points at %s, want %s", id, e.Path, path)
		}
		if _, err := os.Stat(e.Path); err != nil {
			t.Errorf("%s's file is not where the catalog says: %v", id, err)
		}
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*", "*", "*", "*", "*.gguf"))
	if len(left) > 0 {
		t.Errorf("the failed move left %v in the new folder", left)
	}
}
