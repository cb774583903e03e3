package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"
)

// Objects is a storage's content: objects (files) by slash-separated name.
type Objects interface {
	// Put stores r's bytes as name, replacing what was there; size is their count, or -1 when
	// unknown. A reader cut short leaves no partial object behind.
	Put(ctx context.Context, name string, r io.Reader, size int64) error
	// Get opens name for reading; ErrObjectNotFound when there is none.
	Get(ctx context.Context, name string) (io.ReadCloser, error)
	// Stat describes name; ErrObjectNotFound when there is none.
	Stat(ctx context.Context, name string) (Object, error)
	// List is every object whose name starts with prefix ("" for all), in name order. A
	// folder's hidden files and folders (".name") are left out.
	List(ctx context.Context, prefix string) ([]Object, error)
	// Delete removes name; no error when there is none.
	Delete(ctx context.Context, name string) error
}

// Object describes one stored object.
type Object struct {
	Name     string
	Size     int64
	Modified time.Time
}

// CheckName refuses an object name that is empty, absolute, climbs out with "..", or holds
// NUL or a backslash (which Windows reads as a separator). It accepts "a/b.gguf".
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrBadName)
	case strings.ContainsAny(name, "\x00\\"):
		return fmt.Errorf("%w %q: NUL and backslash are not allowed", ErrBadName, name)
	case strings.HasPrefix(name, "/"):
		return fmt.Errorf("%w %q: an absolute path", ErrBadName, name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == "" || part == "." || part == ".." {
			return fmt.Errorf("%w %q: empty, \".\" and \"..\" parts are not allowed", ErrBadName, name)
		}
	}
	if !fs.ValidPath(name) {
		return fmt.Errorf("%w %q", ErrBadName, name)
	}
	return nil
}

// folder is a local, smb or nfs storage: a directory opened as an os.Root, so no name (nor a
// symbolic link inside) reaches past it.
type folder struct {
	dir string
}

// OpenFolder returns the Objects of the directory dir (which must exist).
func OpenFolder(dir string) (Objects, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("open folder: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("open folder %s: not a directory", dir)
	}
	return &folder{dir: dir}, nil
}

func (f *folder) root() (*os.Root, error) { return os.OpenRoot(f.dir) }

func (f *folder) Put(ctx context.Context, name string, r io.Reader, size int64) error {
	if err := CheckName(name); err != nil {
		return err
	}
	root, err := f.root()
	if err != nil {
		return err
	}
	defer root.Close()
	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("put %s: %w", name, err)
		}
	}
	// Written beside, then renamed over: a reader never sees half a file, and a failed copy
	// leaves none.
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	tmp := name + partialMark + hex.EncodeToString(b)
	out, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("put %s: %w", name, err)
	}
	n, err := io.Copy(out, ctxReader{ctx, r})
	if err == nil && size >= 0 && n != size {
		err = fmt.Errorf("got %d bytes, want %d", n, size)
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		_ = root.Remove(tmp)
		return fmt.Errorf("put %s: %w", name, err)
	}
	return nil
}

func (f *folder) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	root, err := f.root()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	file, err := root.Open(name)
	if err != nil {
		return nil, notFound(name, err)
	}
	return file, nil
}

func (f *folder) Stat(ctx context.Context, name string) (Object, error) {
	if err := CheckName(name); err != nil {
		return Object{}, err
	}
	root, err := f.root()
	if err != nil {
		return Object{}, err
	}
	defer root.Close()
	info, err := root.Stat(name)
	if err != nil {
		return Object{}, notFound(name, err)
	}
	if info.IsDir() {
		return Object{}, fmt.Errorf("%w: %s is a folder", ErrObjectNotFound, name)
	}
	return Object{Name: name, Size: info.Size(), Modified: info.ModTime().UTC()}, nil
}

func (f *folder) List(ctx context.Context, prefix string) ([]Object, error) {
	root, err := f.root()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var out []Object
	// root.FS stays inside the folder: WalkDir does not follow symbolic links.
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		// Hidden entries are the machinery's (a download's .locks, a check's probe), not
		// content.
		if p != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || !d.Type().IsRegular() || !strings.HasPrefix(p, prefix) || strings.Contains(d.Name(), partialMark) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, Object{Name: p, Size: info.Size(), Modified: info.ModTime().UTC()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", f.dir, err)
	}
	return out, nil
}

func (f *folder) Delete(ctx context.Context, name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	root, err := f.root()
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	return nil
}

// partialMark marks a file Put is still writing; List skips it.
const partialMark = ".partial-"

func notFound(name string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s", ErrObjectNotFound, name)
	}
	return err
}

// ctxReader stops a copy when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
