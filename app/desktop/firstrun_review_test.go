package desktop_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/superfluid/superfluid/app/desktop"
)

// TestMoveModelsSharedProjector: two pulled models and a model added by path use one projector
// inside the models folder. Whether the move renames or copies, every one of them points at the
// projector in the new folder afterwards, and that file is there: none is left pointing at the
// old place the projector was moved (or, after a copy, deleted) from.
func TestMoveModelsSharedProjector(t *testing.T) {
	for _, copying := range []bool{false, true} {
		t.Run(map[bool]string{false: "rename", true: "copy"}[copying], func(t *testing.T) {
			c, cat, ids := withPulled(t)
			old := c.ModelsDir()
			proj := filepath.Join(old, "mmproj-shared.gguf")
			if err := os.WriteFile(proj, []byte("a projector"), 0o644); err != nil {
				t.Fatal(err)
			}
			users := append([]string{"m"}, ids...)
			for _, id := range users {
				if err := cat.Mgr.Catalog().Relocate(context.Background(), id, entry(t, cat, id).Path, proj); err != nil {
					t.Fatal(err)
				}
			}
			if copying {
				desktop.SetMoveHooks(c, xdev, nil)
			}
			dir := filepath.Join(t.TempDir(), "new")
			if err := c.MoveModels(context.Background(), dir, nil); err != nil {
				t.Fatal(err)
			}
			for _, id := range users {
				e := entry(t, cat, id)
				if !strings.HasPrefix(e.Projector, dir+string(filepath.Separator)) {
					t.Errorf("%s's projector is %s, not in %s", id, e.Projector, dir)
				}
				if _, err := os.Stat(e.Projector); err != nil {
					t.Errorf("%s's projector: %v", id, err)
				}
			}
		})
	}
}

// xdev is a rename between two disks: the move copies.
func xdev(string, string) error { return &os.LinkError{Op: "rename", Err: syscall.EXDEV} }
