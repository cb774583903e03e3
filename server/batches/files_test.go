package batches

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/store"
)

// fileService is a service over the fake engine with a real store and files folder.
func fileService(t *testing.T, cfg Config) (*Service, *store.Store) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "db.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Files.Dir == "" {
		cfg.Files.Dir = filepath.Join(t.TempDir(), "files")
	}
	svc := New(cfg, core.New(core.Config{}, st, fakeModel(t, enginetest.New(4096, "Hello world!"))), st)
	t.Cleanup(func() {
		if err := svc.StopBackground(context.Background()); err != nil {
			t.Error(err)
		}
		st.Close()
	})
	return svc, st
}

// dirNames lists what the files folder holds.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestFileRoundTripAndExpiry(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		expiry time.Duration // the server's --files-expiry
		wish   time.Duration // the client's expires_after
		want   time.Duration // 0: never
	}{
		{"kept until deleted", 0, 0, 0},
		{"server expiry", time.Hour, 0, time.Hour},
		{"client's wish", 0, 2 * time.Hour, 2 * time.Hour},
		{"the shorter wins: client", 3 * time.Hour, 2 * time.Hour, 2 * time.Hour},
		{"the shorter wins: server", time.Hour, 2 * time.Hour, time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, _ := fileService(t, Config{Files: FilesConfig{Expiry: tt.expiry}})
			f, err := svc.CreateFile(ctx, NewFile{Filename: "in.jsonl", Purpose: "batch", ExpiresAfter: tt.wish, Content: strings.NewReader("hello\n")})
			if err != nil {
				t.Fatal(err)
			}
			if !fileID.MatchString(f.ID) || f.Bytes != 6 || f.Filename != "in.jsonl" || f.Purpose != "batch" {
				t.Fatalf("file %+v", f)
			}
			if got := f.ExpiresAt; (tt.want == 0) != got.IsZero() || (tt.want != 0 && !got.Equal(f.CreatedAt.Add(tt.want))) {
				t.Fatalf("expires at %v (created %v), want after %v", got, f.CreatedAt, tt.want)
			}
			got, r, err := svc.OpenFile(ctx, f.ID)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			b, _ := io.ReadAll(r)
			if string(b) != "hello\n" || got.ID != f.ID {
				t.Fatalf("content %q of %+v", b, got)
			}
		})
	}
}

// TestExpiredFileGone: an expired file is not found at once, and the expiry pass removes its
// row and its content.
func TestExpiredFileGone(t *testing.T) {
	ctx := context.Background()
	svc, st := fileService(t, Config{Files: FilesConfig{Expiry: time.Hour}})
	f, err := svc.CreateFile(ctx, NewFile{Filename: "a", Purpose: "user_data", Content: strings.NewReader("x")})
	if err != nil {
		t.Fatal(err)
	}
	later := f.ExpiresAt.Add(time.Second)
	if err := svc.expireFiles(ctx, f.CreatedAt); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.File(ctx, f.ID); err != nil {
		t.Fatalf("a file not yet expired: %v", err)
	}
	if err := svc.expireFiles(ctx, later); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.File(ctx, f.ID); !errors.Is(err, ErrFileNotFound) {
		t.Fatalf("an expired file: %v, want ErrFileNotFound", err)
	}
	if ok, _ := st.HasFile(ctx, f.ID); ok {
		t.Fatal("the expired file's row is still there")
	}
	if names := dirNames(t, svc.cfg.Files.Dir); len(names) != 0 {
		t.Fatalf("the files folder still holds %v", names)
	}
}

// failingReader gives n bytes, then fails like a connection cut halfway.
type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.ErrUnexpectedEOF
	}
	k := min(len(p), r.n)
	for i := range k {
		p[i] = 'x'
	}
	r.n -= k
	return k, nil
}

// TestUploadFaults: an upload over the quota and an upload cut off halfway leave no row and no
// stray file; the quota counts what is stored.
func TestUploadFaults(t *testing.T) {
	ctx := context.Background()
	svc, st := fileService(t, Config{Files: FilesConfig{MaxBytes: 100}})
	if _, err := svc.CreateFile(ctx, NewFile{Filename: "a", Purpose: "batch", Content: strings.NewReader(strings.Repeat("a", 60))}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		content io.Reader
		want    error
	}{
		{"over the quota", strings.NewReader(strings.Repeat("b", 41)), ErrFilesQuota},
		{"far over the quota", &failingReader{n: 1 << 20}, ErrFilesQuota},
		{"cut off halfway", &failingReader{n: 20}, ErrUploadCut},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := svc.CreateFile(ctx, NewFile{Filename: "b", Purpose: "batch", Content: tt.content})
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			files, _, err := svc.Files(ctx, FileQuery{Limit: 10})
			if err != nil || len(files) != 1 {
				t.Fatalf("files after the fault: %+v, %v", files, err)
			}
			if names := dirNames(t, svc.cfg.Files.Dir); len(names) != 1 || names[0] != files[0].ID {
				t.Fatalf("the files folder holds %v, want only %s", names, files[0].ID)
			}
		})
	}
	// What is left fits exactly.
	if _, err := svc.CreateFile(ctx, NewFile{Filename: "c", Purpose: "batch", Content: strings.NewReader(strings.Repeat("c", 40))}); err != nil {
		t.Fatalf("an upload that fits exactly: %v", err)
	}
	if used, _ := st.FilesBytes(ctx); used != 100 {
		t.Fatalf("stored %d bytes, want 100", used)
	}
}

// TestSweepAfterCrash: what a crash can leave in the files folder (a temporary upload, a batch
// output being written, content renamed but never given its row) is removed when the service
// starts; stored files stay.
func TestSweepAfterCrash(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "files")
	svc, st := fileService(t, Config{Files: FilesConfig{Dir: dir}})
	kept, err := svc.CreateFile(ctx, NewFile{Filename: "a", Purpose: "batch", Content: strings.NewReader("keep")})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{uploadPrefix + "123", outputPrefix + "456", newFileID(), "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("half"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A restart: a new service over the same store and folder.
	again := New(Config{Files: FilesConfig{Dir: dir}}, core.New(core.Config{}, st), st)
	if err := again.StartBackground(); err != nil {
		t.Fatal(err)
	}
	defer again.StopBackground(ctx)
	got := dirNames(t, dir)
	slices.Sort(got)
	if want := []string{kept.ID, "notes.txt"}; !slices.Equal(got, want) {
		t.Fatalf("after the sweep the folder holds %v, want %v", got, want)
	}
	if _, err := again.File(ctx, kept.ID); err != nil {
		t.Fatalf("the stored file after the sweep: %v", err)
	}
}

// TestFileIDsNotFound: ids that try to reach outside the folder, malformed ids and unknown ids
// are all the same not-found error, naming the id and nothing of the disk.
func TestFileIDsNotFound(t *testing.T) {
	ctx := context.Background()
	svc, _ := fileService(t, Config{})
	if err := os.MkdirAll(svc.cfg.Files.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// A file beside the folder that a traversal would reach.
	if err := os.WriteFile(filepath.Join(svc.cfg.Files.Dir, "..", "secret"), []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"../secret", "file-../../secret", "..", "", "/etc/passwd", "file-" + strings.Repeat("0", 24), "file-ABC", "file-x\x00"} {
		for name, call := range map[string]func() error{
			"File":       func() error { _, err := svc.File(ctx, id); return err },
			"OpenFile":   func() error { _, _, err := svc.OpenFile(ctx, id); return err },
			"DeleteFile": func() error { return svc.DeleteFile(ctx, id) },
		} {
			err := call()
			var nf *FileNotFoundError
			if !errors.As(err, &nf) || nf.ID != id || err.Error() != "no such file: "+id {
				t.Errorf("%s(%q) = %v, want a FileNotFoundError", name, id, err)
			}
		}
	}
}

func TestFilesPage(t *testing.T) {
	ctx := context.Background()
	svc, _ := fileService(t, Config{})
	var ids []string
	for i := range 3 {
		purpose := "batch"
		if i == 1 {
			purpose = "user_data"
		}
		f, err := svc.CreateFile(ctx, NewFile{Filename: "f", Purpose: purpose, Content: strings.NewReader("x")})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, f.ID)
	}
	tests := []struct {
		q    FileQuery
		want []string
		more bool
	}{
		{FileQuery{Limit: 2}, []string{ids[2], ids[1]}, true},
		{FileQuery{Limit: 2, After: ids[1]}, []string{ids[0]}, false},
		{FileQuery{Limit: 5, Ascending: true}, ids, false},
		{FileQuery{Limit: 5, Purpose: "user_data"}, []string{ids[1]}, false},
	}
	for _, tt := range tests {
		files, more, err := svc.Files(ctx, tt.q)
		var got []string
		for _, f := range files {
			got = append(got, f.ID)
		}
		if err != nil || !slices.Equal(got, tt.want) || more != tt.more {
			t.Errorf("Files(%+v) = %v, more %v, %v; want %v, more %v", tt.q, got, more, err, tt.want, tt.more)
		}
	}
	if err := svc.DeleteFile(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if err := svc.DeleteFile(ctx, ids[0]); !errors.Is(err, ErrFileNotFound) {
		t.Fatalf("deleting twice: %v", err)
	}
}
