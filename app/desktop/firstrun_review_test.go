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
			dir := moveAll(t, c, copying)
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

// moveAll moves c's models into a new folder, copying them (as between two disks) when copying
// is set, and returns the folder.
func moveAll(t *testing.T, c *desktop.Controller, copying bool) string {
	t.Helper()
	if copying {
		desktop.SetMoveHooks(c, xdev, nil)
	}
	dir := filepath.Join(t.TempDir(), "new")
	if err := c.MoveModels(context.Background(), dir, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

// holdCopy makes c's next move copy (as between two disks) and hold its first file: copying
// closes when the copy is under way; closing release lets it go on.
func holdCopy(c *desktop.Controller) (copying, release chan struct{}) {
	copying, release = make(chan struct{}), make(chan struct{})
	var once bool
	desktop.SetMoveHooks(c, xdev, func(name string) (desktop.MoveFile, error) {
		if !once {
			once = true
			close(copying)
			<-release
		}
		return os.Create(name)
	})
	return copying, release
}

// TestMoveModelsTargetByLink: a target that is a link to the models folder, or into it, is the
// same folder by another spelling: refused, and every model stays where it was.
func TestMoveModelsTargetByLink(t *testing.T) {
	c, cat, ids := withPulled(t)
	old := c.ModelsDir()
	before := entry(t, cat, ids[0]).Path
	sub := filepath.Join(old, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	links := t.TempDir()
	for _, to := range []string{old, sub} {
		link := filepath.Join(links, filepath.Base(to)+"-link")
		if err := os.Symlink(to, link); err != nil {
			t.Fatal(err)
		}
		err := c.MoveModels(context.Background(), link, nil)
		if err == nil || !strings.Contains(err.Error(), "by a link") {
			t.Errorf("a target linked to %s: %v", to, err)
		}
		if c.ModelsDir() != old || entry(t, cat, ids[0]).Path != before {
			t.Fatalf("after a refused move to %s: models dir %s, %s at %s", link, c.ModelsDir(), ids[0], entry(t, cat, ids[0]).Path)
		}
		if _, err := os.Stat(before); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMoveModelsLinkedFile: a model file in the models folder that is a relative link to a
// file kept elsewhere still leads to that file after the move (renamed or copied), the file
// itself untouched and not copied.
func TestMoveModelsLinkedFile(t *testing.T) {
	for _, copying := range []bool{false, true} {
		t.Run(map[bool]string{false: "rename", true: "copy"}[copying], func(t *testing.T) {
			c, cat, ids := withPulled(t)
			path := entry(t, cat, ids[1]).Path
			keep := filepath.Join(filepath.Dir(c.ModelsDir()), "kept elsewhere.gguf")
			if err := os.Rename(path, keep); err != nil {
				t.Fatal(err)
			}
			rel, err := filepath.Rel(filepath.Dir(path), keep)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(rel, path); err != nil {
				t.Fatal(err)
			}
			dir := moveAll(t, c, copying)
			e := entry(t, cat, ids[1])
			if !strings.HasPrefix(e.Path, dir) {
				t.Fatalf("not moved: %s", e.Path)
			}
			if got, err := filepath.EvalSymlinks(e.Path); err != nil || got != keep {
				t.Fatalf("the moved link leads to %q (%v), want %s", got, err, keep)
			}
			if err := c.Load(ids[1]); err != nil {
				t.Fatalf("load after the move: %v", err)
			}
		})
	}
}

// TestMoveModelsBlocksDeletes: a Delete while the move copies is refused (the move would
// relocate a model that is gone, or copy a file being deleted), and every model, the one
// asked for included, is in the new folder afterwards and still deletable.
func TestMoveModelsBlocksDeletes(t *testing.T) {
	c, cat, ids := withPulled(t)
	copying, release := holdCopy(c)
	dir := filepath.Join(t.TempDir(), "new")
	done := make(chan error, 1)
	go func() { done <- c.MoveModels(context.Background(), dir, nil) }()
	<-copying
	derr := c.Delete(ids[1])
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the move: %v", err)
	}
	if derr == nil || !strings.Contains(derr.Error(), "being moved") {
		t.Fatalf("delete during the move: %v", derr)
	}
	for _, id := range append(ids, "one-alias") {
		if e := entry(t, cat, id); !strings.HasPrefix(e.Path, dir) || e.Err != nil {
			t.Fatalf("%s after the move: %s %v", id, e.Path, e.Err)
		}
	}
	if err := c.Delete(ids[1]); err != nil {
		t.Fatalf("delete after the move: %v", err)
	}
}

// TestMoveModelsAfterACrash: the app died in a move after renaming a model's file into the new
// folder and before the catalog pointed there (the model shows missing); the next move to that
// folder finishes it: the model points at its file there and loads.
func TestMoveModelsAfterACrash(t *testing.T) {
	c, cat, ids := withPulled(t)
	old := c.ModelsDir()
	dir := filepath.Join(t.TempDir(), "new")
	path := entry(t, cat, ids[1]).Path
	rel, _ := filepath.Rel(old, path)
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path, filepath.Join(dir, rel)); err != nil { // the crashed move's rename
		t.Fatal(err)
	}
	if err := c.MoveModels(context.Background(), dir, nil); err != nil {
		t.Fatalf("the move after the crash: %v", err)
	}
	if e := entry(t, cat, ids[1]); e.Path != filepath.Join(dir, rel) {
		t.Fatalf("%s at %s", ids[1], e.Path)
	}
	if err := c.Load(ids[1]); err != nil {
		t.Fatalf("load: %v", err)
	}
}
