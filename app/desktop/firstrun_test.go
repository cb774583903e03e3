package desktop_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/superfluid/superfluid/app/desktop"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server/servertest"
)

// withPulled is newController with two models pulled from the fake Hub into the models folder
// (one with an alias) beside the model m added by path; it returns their ids.
func withPulled(t *testing.T) (*desktop.Controller, *servertest.Catalog, []string) {
	t.Helper()
	c, cat, _ := newController(t)
	cat.Hub.AddFile("owner/one", "one-Q8_0.gguf", servertest.TinyModel(t, gguftest.TinyLlamaOptions{Seed: 1}))
	cat.Hub.AddFile("owner/two", "two-Q8_0.gguf", servertest.TinyModel(t, gguftest.TinyLlamaOptions{Seed: 2}))
	ids := []string{"hf.co/owner/one:Q8_0", "hf.co/owner/two:Q8_0"}
	for _, ref := range ids {
		if err := c.Pull(context.Background(), ref); err != nil {
			t.Fatalf("pull %s: %v", ref, err)
		}
	}
	if _, err := cat.Mgr.Catalog().Copy(context.Background(), ids[0], "one-alias"); err != nil {
		t.Fatal(err)
	}
	return c, cat, ids
}

func entry(t *testing.T, cat *servertest.Catalog, id string) *models.Entry {
	t.Helper()
	e, err := cat.Mgr.Catalog().Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// reopened is the catalog as the next start reads it from the store.
func reopened(t *testing.T, cat *servertest.Catalog, dir string) *models.Catalog {
	t.Helper()
	fresh, err := models.OpenCatalog(context.Background(), cat.Store, dir)
	if err != nil {
		t.Fatal(err)
	}
	return fresh
}

// TestFirstRunIsRemembered: a fresh store is a first run until SetWelcomed, and stays welcomed
// for a controller over the same store (the next start).
func TestFirstRunIsRemembered(t *testing.T) {
	c, cat, _ := newController(t)
	if !c.FirstRun() {
		t.Fatal("a fresh store is not a first run")
	}
	if err := c.SetWelcomed(); err != nil || c.FirstRun() {
		t.Fatalf("after SetWelcomed (%v): still a first run", err)
	}
	if v, _ := cat.Store.AppSetting(context.Background(), "welcomed"); v != "true" {
		t.Fatalf("stored %q", v)
	}
}

// TestMoveModels: the pulled models (and the alias sharing a file) move into the new folder,
// the catalog points there, now and reopened from the store, the old files are gone, the model
// added by path stays, the folder is stored for the next start, and a moved model loads.
func TestMoveModels(t *testing.T) {
	c, cat, ids := withPulled(t)
	old := c.ModelsDir()
	oldPath := entry(t, cat, ids[0]).Path
	byPath := entry(t, cat, "m").Path
	dir := filepath.Join(t.TempDir(), "new models")
	var last, total int64
	if err := c.MoveModels(context.Background(), dir, func(d, tot int64) { last, total = d, tot }); err != nil {
		t.Fatal(err)
	}
	if c.ModelsDir() != dir || last != total || total == 0 {
		t.Fatalf("models dir %s, progress %d/%d", c.ModelsDir(), last, total)
	}
	want := filepath.Join(dir, strings.TrimPrefix(oldPath, old+string(filepath.Separator)))
	for _, cat := range []*models.Catalog{cat.Mgr.Catalog(), reopened(t, cat, dir)} {
		for _, id := range append(ids, "one-alias") {
			e, err := cat.Lookup(id)
			if err != nil || e.Err != nil || !strings.HasPrefix(e.Path, dir+string(filepath.Separator)) {
				t.Fatalf("%s after the move: %v %+v", id, err, e)
			}
		}
		if e, _ := cat.Lookup(ids[0]); e.Path != want {
			t.Fatalf("%s at %s, want %s", ids[0], e.Path, want)
		}
		if e, _ := cat.Lookup("m"); e.Path != byPath {
			t.Fatalf("the model added by path moved to %s", e.Path)
		}
	}
	if _, err := os.Stat(oldPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the old file is still there: %v", err)
	}
	if _, err := os.Stat(byPath); err != nil {
		t.Fatalf("the model added by path: %v", err)
	}
	if v, _ := cat.Store.AppSetting(context.Background(), desktop.SettingModelsDir); v != dir {
		t.Fatalf("stored models dir %q", v)
	}
	if err := c.Load(ids[1]); err != nil || !state(c, ids[1]).Loaded() {
		t.Fatalf("load after the move: %v", err)
	}
}

// TestMoveModelsRefuses: each bad target says what is wrong and moves nothing.
func TestMoveModelsRefuses(t *testing.T) {
	c, cat, ids := withPulled(t)
	old := c.ModelsDir()
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, dir, want string }{
		{"inside the old folder", filepath.Join(old, "sub"), "is inside the current models folder"},
		{"the old folder", old, "the models are already in"},
		{"a file", file, "is a file, not a folder; choose a folder"},
		{"not writable (under a file)", filepath.Join(file, "models"), "choose a folder you can write to"},
		{"relative", "models", "full path"},
	}
	if os.Geteuid() != 0 { // root writes anywhere
		ro := t.TempDir()
		if err := os.Chmod(ro, 0o500); err != nil {
			t.Fatal(err)
		}
		tests = append(tests, struct{ name, dir, want string }{"read-only", ro, "cannot write to"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.MoveModels(context.Background(), tt.dir, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
			if c.ModelsDir() != old || !strings.HasPrefix(entry(t, cat, ids[0]).Path, old) {
				t.Fatal("something moved")
			}
		})
	}
	t.Run("a model loaded", func(t *testing.T) {
		if err := c.Load(ids[0]); err != nil {
			t.Fatal(err)
		}
		defer c.Unload(ids[0])
		err := c.MoveModels(context.Background(), t.TempDir(), nil)
		if err == nil || !strings.Contains(err.Error(), ids[0]+" is loaded; unload it first") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("a download running", func(t *testing.T) {
		data := servertest.TinyModel(t, gguftest.TinyLlamaOptions{Seed: 3})
		cat.Hub.AddFile("owner/slow", "slow-Q8_0.gguf", data)
		cat.Hub.Faults("owner/slow", "slow-Q8_0.gguf").StallAt.Store(int64(len(data) / 2))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Pull(ctx, "hf.co/owner/slow:Q8_0") }()
		defer func() { cancel(); <-done }()
		for cat.Hub.BytesSent("owner/slow", "slow-Q8_0.gguf") == 0 {
			select {
			case err := <-done:
				t.Fatalf("the pull ended: %v", err)
			default:
			}
		}
		err := c.MoveModels(context.Background(), t.TempDir(), nil)
		if err == nil || !strings.Contains(err.Error(), "the download of hf.co/owner/slow:Q8_0 is running; wait for it to finish or cancel it") {
			t.Fatalf("got %v", err)
		}
	})
}

// fillingFile is a file on a disk with room for left bytes: past them writes fail with ENOSPC.
type fillingFile struct {
	*os.File
	left *int64
}

func (f fillingFile) Write(p []byte) (int, error) {
	if int64(len(p)) > *f.left {
		n, _ := f.File.Write(p[:*f.left])
		*f.left = 0
		return n, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	*f.left -= int64(len(p))
	return f.File.Write(p)
}

// TestMoveModelsInterrupted: a move between two disks (a copy) cut short by a full disk, or by
// cancelling, leaves every model usable where the catalog says it is (the first moved, the
// rest where they were, reopened from the store too), no half copy behind, and the old folder
// still the models folder; a second move finishes it.
func TestMoveModelsInterrupted(t *testing.T) {
	crossDevice := func(string, string) error { return &os.LinkError{Op: "rename", Err: syscall.EXDEV} }
	xcat := mustCatalog(t)
	size := entry(t, xcat, "x").Size // one tiny model's bytes
	cases := []struct {
		name   string
		cut    func(cancel context.CancelFunc, done int64)
		room   int64
		reason string
	}{
		{"a full disk", func(context.CancelFunc, int64) {}, size + size/2, "is full; free some space or choose another folder"},
		{"cancelled", func(cancel context.CancelFunc, done int64) {
			if done > size+size/2 {
				cancel()
			}
		}, 1 << 40, "context canceled"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, cat, ids := withPulled(t)
			old := c.ModelsDir()
			room := tc.room
			desktop.SetMoveHooks(c, crossDevice, func(name string) (desktop.MoveFile, error) {
				f, err := os.Create(name)
				return fillingFile{File: f, left: &room}, err
			})
			dir := filepath.Join(t.TempDir(), "small disk")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			err := c.MoveModels(ctx, dir, func(done, _ int64) { tc.cut(cancel, done) })
			if err == nil || !strings.Contains(err.Error(), tc.reason) || !strings.Contains(err.Error(), "moved 1 of 2 models") {
				t.Fatalf("got %v", err)
			}
			if c.ModelsDir() != old {
				t.Fatalf("models dir %s", c.ModelsDir())
			}
			if v, _ := cat.Store.AppSetting(context.Background(), desktop.SettingModelsDir); v != "" {
				t.Fatalf("stored models dir %q", v)
			}
			for _, catalog := range []*models.Catalog{cat.Mgr.Catalog(), reopened(t, cat, old)} {
				for id, in := range map[string]string{ids[0]: dir, "one-alias": dir, ids[1]: old} {
					e, err := catalog.Lookup(id)
					if err != nil || e.Err != nil || !strings.HasPrefix(e.Path, in+string(filepath.Separator)) {
						t.Fatalf("%s: %v, at %s (want in %s), %v", id, err, e.Path, in, e.Err)
					}
				}
			}
			leftovers, _ := filepath.Glob(filepath.Join(dir, "hf", "owner", "two", "*", "*"))
			if len(leftovers) != 0 {
				t.Fatalf("half copies left: %v", leftovers)
			}
			for _, id := range ids {
				if err := c.Load(id); err != nil {
					t.Fatalf("load %s after the cut move: %v", id, err)
				}
				c.Unload(id)
			}
			desktop.SetMoveHooks(c, crossDevice, nil)
			if err := c.MoveModels(context.Background(), dir, nil); err != nil || c.ModelsDir() != dir {
				t.Fatalf("the second move: %v", err)
			}
			if e := entry(t, cat, ids[1]); !strings.HasPrefix(e.Path, dir) || e.Err != nil {
				t.Fatalf("after the second move: %+v", e)
			}
		})
	}
}

// mustCatalog is a catalog with one tiny model x, for its size.
func mustCatalog(t *testing.T) *servertest.Catalog {
	cat := servertest.NewCatalog(t, models.Config{})
	cat.AddModel(t, "x", gguftest.TinyLlamaOptions{Seed: 1})
	return cat
}

// TestMoveModelsToAFullTmpfs: a real small disk (a tmpfs with room for one model and a half,
// where the test may mount one): the move copies the first model, the disk fills during the
// second, and the message says so; the second model still loads from where it was.
func TestMoveModelsToAFullTmpfs(t *testing.T) {
	c, cat, ids := withPulled(t)
	size := entry(t, cat, ids[0]).Size
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	room := (size + size/2 + 4095) / 4096 * 4096
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", room), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("no tmpfs can be mounted here (%v: %s); TestMoveModelsInterrupted injects the full disk instead", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	old := c.ModelsDir()
	err := c.MoveModels(context.Background(), dir, nil)
	if err == nil || !strings.Contains(err.Error(), "moved 1 of 2 models") || !strings.Contains(err.Error(), "is full; free some space or choose another folder") {
		t.Fatalf("got %v", err)
	}
	if e := entry(t, cat, ids[1]); !strings.HasPrefix(e.Path, old) || e.Err != nil {
		t.Fatalf("the model that did not fit: %+v", e)
	}
	if e := entry(t, cat, ids[0]); !strings.HasPrefix(e.Path, dir) || e.Err != nil {
		t.Fatalf("the model that fit: %+v", e)
	}
	for _, id := range ids {
		if err := c.Load(id); err != nil {
			t.Fatalf("load %s: %v", id, err)
		}
		c.Unload(id)
	}
	if c.ModelsDir() != old {
		t.Fatalf("models dir %s", c.ModelsDir())
	}
}

// TestMoveModelsBlocksLoadsAndPulls: while a move copies, a Load and a Pull are refused with
// a reason (a file may be half-way to the new folder); after it, both work again.
func TestMoveModelsBlocksLoadsAndPulls(t *testing.T) {
	c, cat, ids := withPulled(t)
	copying, release := holdCopy(c)
	done := make(chan error, 1)
	go func() { done <- c.MoveModels(context.Background(), filepath.Join(t.TempDir(), "new"), nil) }()
	<-copying
	lerr := c.Load(ids[1])
	perr := c.Pull(context.Background(), "hf.co/owner/one:Q8_0")
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if lerr == nil || !strings.Contains(lerr.Error(), "the models folder is being moved; load the model once the move is done") {
		t.Fatalf("load during the move: %v", lerr)
	}
	if perr == nil || !strings.Contains(perr.Error(), "the models folder is being moved; download again once the move is done") {
		t.Fatalf("pull during the move: %v", perr)
	}
	if err := c.Load(ids[1]); err != nil || !strings.HasPrefix(entry(t, cat, ids[1]).Path, c.ModelsDir()) {
		t.Fatalf("load after the move: %v", err)
	}
}
