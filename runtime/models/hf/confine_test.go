package hf

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// What a download leaves on disk: synced before it returns, and never outside its folder.

// TestDownloadSyncsBeforeItReturns: the file's bytes are synced before the rename and its
// folder after it, both before Download returns (and the caller inserts the catalog row), so
// a power cut never leaves a row over an empty or missing file.
func TestDownloadSyncsBeforeItReturns(t *testing.T) {
	f := newFixture(t, 256<<10, nil)
	var mu sync.Mutex
	var events []string
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	record := func(what, dir string) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, fmt.Sprintf("%s partial=%v final=%v", what, exists(f.partial()), exists(f.final())))
		if dir != "" && dir != f.dir {
			t.Errorf("synced folder %s, want %s", dir, f.dir)
		}
	}
	f.c.openPartial = func(name string) (partialFile, error) {
		pf, err := openPartialFile(name)
		if err != nil {
			return nil, err
		}
		return &syncFile{partialFile: pf, sync: func() { record("file", "") }}, nil
	}
	f.c.syncDir = func(dir string) error {
		record("folder", dir)
		return syncDirectory(dir)
	}
	paths, prog, err := f.download(t, context.Background())
	f.mustComplete(t, paths, prog, err)
	mu.Lock()
	defer mu.Unlock()
	want := []string{"file partial=true final=false", "folder partial=false final=true"}
	if !slices.Equal(events, want) {
		t.Errorf("syncs %q, want %q", events, want)
	}
}

// TestDownloadRefusesNamesOutsideItsFolder: a Resolved whose file names would leave the
// download folder (however it was made) writes nothing.
func TestDownloadRefusesNamesOutsideItsFolder(t *testing.T) {
	f := newFixture(t, 1<<10, nil)
	root := t.TempDir()
	dir := filepath.Join(root, "models")
	for _, name := range []string{"../x.gguf", "/abs/x.gguf", `..\x.gguf`, "a/../../x.gguf", "x\x00.gguf", ".hidden.gguf", "..", "x.gguf/.."} {
		res := *f.res
		res.Files = []RemoteFile{{Path: name, Size: int64(len(f.data)), SHA256: f.srv.SHA256(testRepo, f.name)}}
		if _, err := f.c.Download(context.Background(), &res, dir, nil); !errors.Is(err, ErrBadAnswer) {
			t.Errorf("Download of %q: %v, want ErrBadAnswer", name, err)
		}
	}
	var written []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			written = append(written, p)
		}
		return nil
	})
	if len(written) != 0 {
		t.Errorf("wrote %q", written)
	}
}

// syncFile records the order of a partial file's sync against the rename that follows it.
type syncFile struct {
	partialFile
	sync func()
}

func (s *syncFile) Sync() error {
	s.sync()
	return s.partialFile.Sync()
}
