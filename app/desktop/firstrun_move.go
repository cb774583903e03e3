package desktop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"syscall"

	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/tray"
)

// moveFile is the part of *os.File a copy writes to; tests inject a disk that fills.
type moveFile interface {
	io.Writer
	Sync() error
	Close() error
}

// mover does the file work of a move: renames (one filesystem) or copies. Its hooks are
// os.Rename and os.Create outside tests.
type mover struct {
	rename func(oldpath, newpath string) error
	create func(name string) (moveFile, error)
}

func (m mover) withDefaults() mover {
	if m.rename == nil {
		m.rename = os.Rename
	}
	if m.create == nil {
		m.create = func(name string) (moveFile, error) { return os.Create(name) }
	}
	return m
}

// moveGroup is the entries that share one model file (a model and its aliases) and the files
// they use inside the models folder (the parts of a split model, their projector).
type moveGroup struct {
	ids   []string
	files []string
}

// MoveModels moves every model file the catalog owns (inside the current models folder) into
// dir, keeping its place under the folder, and makes dir the models folder, now and at the
// next start. Models added by path stay where they are. Each model moves whole before the
// catalog points at its new place, and its old files go only then: a move cut short (cancelled,
// a full disk) leaves every model usable, the ones done in dir, the others where they were,
// and a second move finishes it.
func (c *Controller) MoveModels(ctx context.Context, dir string, progress func(done, total int64)) error {
	if progress == nil {
		progress = func(int64, int64) {}
	}
	old := c.ModelsDir()
	dir, err := checkMoveTarget(old, dir)
	if err != nil {
		return err
	}
	// The core's guard, which every client's pulls, deletes and loads go through, not the
	// desktop's own: a download started over the HTTP API stops the move as one from here does.
	end, err := c.svc.BeginModelsMove()
	if err != nil {
		return err
	}
	defer end()
	groups, total := c.moveGroups()
	m := c.move.withDefaults()
	var done int64
	for i, g := range groups {
		to := func(p string) string { return filepath.Join(dir, relTo(old, p)) }
		copied, renamed, err := m.moveFiles(ctx, g.files, to, func(n int64) {
			done += n
			progress(done, total)
		})
		if err == nil {
			err = c.relocate(ctx, g, to)
		}
		if err != nil {
			// The catalog points at the old place (relocate undid its part): so do the files.
			for _, f := range renamed {
				_ = m.rename(to(f), f)
			}
			for _, f := range copied { // the copies the catalog never pointed at
				os.Remove(to(f))
			}
			return fmt.Errorf("moved %d of %d models to %s, the others are still in %s: %w", i, len(groups), dir, old, err)
		}
		for _, f := range copied {
			os.Remove(f)
		}
	}
	if err := c.d.Store.SetAppSetting(context.Background(), SettingModelsDir, dir); err != nil {
		return fmt.Errorf("the models are in %s, but it could not be saved as the models folder: %w", dir, err)
	}
	if err := c.svc.SetModelsDir(dir); err != nil {
		return err
	}
	progress(total, total)
	c.publish(tray.Event{Kind: tray.EventModels})
	return nil
}

// checkMoveTarget says what is wrong with dir as the new models folder, or returns it
// cleaned, created and writable.
func checkMoveTarget(old, dir string) (string, error) {
	if dir == "" || !filepath.IsAbs(dir) {
		return "", fmt.Errorf("choose a folder by its full path (%q is not one)", dir)
	}
	dir = filepath.Clean(dir)
	if dir == filepath.Clean(old) {
		return "", fmt.Errorf("the models are already in %s", dir)
	}
	if rel, err := filepath.Rel(old, dir); err == nil && filepath.IsLocal(rel) {
		return "", fmt.Errorf("%s is inside the current models folder %s; choose a folder outside it", dir, old)
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return "", fmt.Errorf("%s is a file, not a folder; choose a folder", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("cannot create %s (%v); choose a folder you can write to", dir, errReason(err))
	}
	// The same checks on the folders symlinks lead to: a link to the models folder (or into it)
	// is the same folder by another spelling.
	realOld, err1 := filepath.EvalSymlinks(old)
	realDir, err2 := filepath.EvalSymlinks(dir)
	if err1 == nil && err2 == nil {
		if realDir == realOld {
			return "", fmt.Errorf("%s is the current models folder %s (by a link); choose another folder", dir, old)
		}
		if rel, err := filepath.Rel(realOld, realDir); err == nil && filepath.IsLocal(rel) {
			return "", fmt.Errorf("%s leads inside the current models folder %s (by a link); choose a folder outside it", dir, old)
		}
	}
	probe, err := os.CreateTemp(dir, ".superfluid-write-check-*")
	if err != nil {
		return "", fmt.Errorf("cannot write to %s (%v); choose a folder you can write to", dir, errReason(err))
	}
	probe.Close()
	os.Remove(probe.Name())
	return dir, nil
}

// errReason is the cause of a path error ("permission denied"), without the path again.
func errReason(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// moveGroups groups the catalog's entries by the files they use inside the models folder
// (model file, split parts, projector) and sums the bytes to move. Entries that share any file
// (a model and its aliases, two models with one projector, a model added by path with a
// projector inside the folder) are one group, so that every entry using a file is relocated
// with it and no file is moved (or its original removed) while another entry points at it.
func (c *Controller) moveGroups() ([]moveGroup, int64) {
	cat := c.mgr.Catalog()
	type group struct {
		ids   []string
		files []string
	}
	byFile := map[string]*group{}
	var all []*group
	entries := append(cat.List(), cat.Adapters("")...)
	for _, e := range entries {
		var files []string
		if cat.Owns(e.Path) {
			files = splitParts(e.Path)
		}
		if e.Projector != "" && cat.Owns(e.Projector) {
			files = append(files, e.Projector)
		}
		if len(files) == 0 {
			continue
		}
		g := &group{ids: []string{e.ID}}
		all = append(all, g)
		for _, f := range files {
			other := byFile[f]
			switch {
			case other == g:
			case other != nil: // merge the other group into g
				g.ids = append(g.ids, other.ids...)
				for _, of := range other.files {
					byFile[of] = g
				}
				g.files = append(g.files, other.files...)
				other.ids, other.files = nil, nil
			default:
				byFile[f] = g
				g.files = append(g.files, f)
			}
		}
	}
	var total int64
	out := []moveGroup{}
	for _, g := range all {
		if len(g.ids) == 0 {
			continue
		}
		sort.Strings(g.ids)
		for _, f := range g.files {
			if st, err := os.Stat(f); err == nil {
				total += st.Size()
			}
		}
		out = append(out, moveGroup{ids: g.ids, files: g.files})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ids[0] < out[j].ids[0] })
	return out, total
}

// splitPart is the name of a split model's part: NAME-00001-of-00003.gguf.
var splitPart = regexp.MustCompile(`^(.*)-(\d{5})-of-(\d{5})\.gguf$`)

// splitParts is the model file and, for a split model, its other parts present beside it.
func splitParts(path string) []string {
	m := splitPart.FindStringSubmatch(filepath.Base(path))
	if m == nil {
		return []string{path}
	}
	parts, _ := filepath.Glob(filepath.Join(filepath.Dir(path), m[1]+"-[0-9][0-9][0-9][0-9][0-9]-of-"+m[3]+".gguf"))
	if len(parts) == 0 {
		return []string{path}
	}
	return parts
}

// relocate points the group's entries at their files in the new folder, or, when one cannot
// be, the ones it did back at the old place.
func (c *Controller) relocate(ctx context.Context, g moveGroup, to func(string) string) (err error) {
	cat := c.mgr.Catalog()
	moved := map[string]bool{}
	for _, f := range g.files {
		moved[f] = true
	}
	type place struct{ id, path, proj string }
	var done []place
	defer func() {
		if err != nil {
			for _, p := range done {
				_ = c.svc.RelocateModel(context.WithoutCancel(ctx), p.id, p.path, p.proj)
			}
		}
	}()
	for _, id := range g.ids {
		e, err := cat.Lookup(id)
		if err != nil {
			if e, err = adapterEntry(cat, id); err != nil {
				return err
			}
		}
		path, proj := e.Path, e.Projector
		if moved[path] {
			path = to(path)
		}
		if moved[proj] {
			proj = to(proj)
		}
		if err := c.svc.RelocateModel(ctx, id, path, proj); err != nil {
			return err
		}
		done = append(done, place{id, e.Path, e.Projector})
	}
	return nil
}

func adapterEntry(cat *models.Catalog, id string) (*models.Entry, error) {
	for _, a := range cat.Adapters("") {
		if a.ID == id {
			return a, nil
		}
	}
	return nil, fmt.Errorf("the model %s is no longer in the catalog", id)
}

func relTo(old, p string) string {
	rel, err := filepath.Rel(old, p)
	if err != nil {
		return filepath.Base(p)
	}
	return rel
}

// moveFiles moves files to to(file): a rename on one filesystem, else a copy (synced and its
// size checked) whose original the caller removes once the catalog points at the copy; it
// returns those originals, and the files renamed (for the caller to rename back when the
// catalog cannot point at them). moved reports bytes as they move. On an error the files
// already renamed are renamed back and the copies removed, so the model stays where it was.
func (m mover) moveFiles(ctx context.Context, files []string, to func(string) string, moved func(int64)) (copied, renamed []string, err error) {
	defer func() {
		if err != nil {
			for _, f := range renamed {
				_ = m.rename(to(f), f)
			}
			for _, f := range copied {
				os.Remove(to(f))
			}
			copied, renamed = nil, nil
		}
	}()
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return copied, renamed, err
		}
		dst := to(f)
		st, err := os.Stat(f)
		if errors.Is(err, os.ErrNotExist) {
			if _, derr := os.Stat(dst); derr == nil {
				// Renamed by a move the app quit (or crashed) in before the catalog
				// pointed there: count it moved, so this move finishes it.
				renamed = append(renamed, f)
				continue
			}
		}
		if err != nil {
			return copied, renamed, fmt.Errorf("read %s: %w", f, err)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return copied, renamed, fmt.Errorf("create %s: %w", filepath.Dir(dst), err)
		}
		if _, err := os.Lstat(dst); err == nil {
			return copied, renamed, fmt.Errorf("%s exists already; move it away or choose another folder", dst)
		}
		if lst, err := os.Lstat(f); err == nil && lst.Mode()&os.ModeSymlink != 0 {
			// A link (perhaps relative, to a file kept elsewhere): renamed it would lead
			// nowhere. The new folder gets a link to the same file by its full path; the
			// old link goes once the catalog points at the new one, the file stays.
			target, err := filepath.EvalSymlinks(f)
			if err == nil {
				err = os.Symlink(target, dst)
			}
			if err != nil {
				return copied, renamed, fmt.Errorf("move the link %s: %w", f, err)
			}
			copied = append(copied, f)
			moved(st.Size())
			continue
		}
		err = m.rename(f, dst)
		if err == nil {
			renamed = append(renamed, f)
			moved(st.Size())
			continue
		}
		if !errors.Is(err, syscall.EXDEV) {
			return copied, renamed, fmt.Errorf("move %s: %w", f, err)
		}
		if err := m.copyFile(ctx, f, dst, st.Size(), moved); err != nil {
			os.Remove(dst)
			return copied, renamed, err
		}
		copied = append(copied, f)
	}
	return copied, renamed, nil
}

// copyFile copies src to dst through a temporary name, synced, its size checked, then renamed.
func (m mover) copyFile(ctx context.Context, src, dst string, size int64, moved func(int64)) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("read %s: %w", src, err)
	}
	defer in.Close()
	tmp := dst + ".moving"
	out, err := m.create(tmp)
	if err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	defer os.Remove(tmp)
	n, err := io.CopyBuffer(&ctxWriter{ctx: ctx, w: out, moved: moved}, in, make([]byte, 1<<20))
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			return fmt.Errorf("the disk holding %s is full; free some space or choose another folder", filepath.Dir(dst))
		}
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if st, err := os.Stat(tmp); err != nil || n != size || st.Size() != size {
		return fmt.Errorf("copy %s: %d of %d bytes arrived", src, n, size)
	}
	return os.Rename(tmp, dst)
}

// ctxWriter stops a copy when the context ends and reports what it wrote.
type ctxWriter struct {
	ctx   context.Context
	w     io.Writer
	moved func(int64)
}

func (w *ctxWriter) Write(p []byte) (int, error) {
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := w.w.Write(p)
	w.moved(int64(n))
	return n, err
}
