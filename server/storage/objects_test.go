package storage

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"a.gguf", "owner/repo/model-Q4_K_M.gguf", "dir/.hidden"} {
		if err := CheckName(ok); err != nil {
			t.Errorf("CheckName(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "/etc/passwd", "../x", "a/../../x", "a/..", "a//b", "./a", "a\x00b", `a\..\b`, "a/"} {
		if err := CheckName(bad); !errors.Is(err, ErrBadName) {
			t.Errorf("CheckName(%q) = %v, want ErrBadName", bad, err)
		}
	}
}

// A folder never lets a name, or a symbolic link inside it, reach outside it.
func TestFolderStaysInside(t *testing.T) {
	ctx := context.Background()
	parent := t.TempDir()
	dir := filepath.Join(parent, "store")
	outside := filepath.Join(parent, "outside")
	for _, d := range []string{dir, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	objs, err := OpenFolder(dir)
	if err != nil {
		t.Fatal(err)
	}

	if err := objs.Put(ctx, "m/a.gguf", strings.NewReader("hello"), 5); err != nil {
		t.Fatal(err)
	}
	r, err := objs.Get(ctx, "m/a.gguf")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(r)
	r.Close()
	if string(got) != "hello" {
		t.Errorf("read back %q", got)
	}

	for _, name := range []string{"../outside/secret.txt", "link/secret.txt", "/etc/hostname"} {
		if _, err := objs.Get(ctx, name); err == nil {
			t.Errorf("Get(%q) read outside the folder", name)
		}
		if err := objs.Put(ctx, name, strings.NewReader("x"), 1); err == nil {
			t.Errorf("Put(%q) wrote outside the folder", name)
		}
		if _, err := objs.Stat(ctx, name); err == nil {
			t.Errorf("Stat(%q) saw outside the folder", name)
		}
	}
	if err := objs.Delete(ctx, "link/secret.txt"); err == nil {
		t.Errorf("Delete through the link succeeded")
	}
	if b, err := os.ReadFile(filepath.Join(outside, "secret.txt")); err != nil || string(b) != "outside" {
		t.Errorf("the outside file changed: %q, %v", b, err)
	}

	// Hidden files (a download's lock) are not content.
	if err := os.MkdirAll(filepath.Join(dir, ".locks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".locks", "a.lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A short body leaves nothing behind.
	if err := objs.Put(ctx, "short.bin", strings.NewReader("abc"), 10); err == nil {
		t.Error("a body shorter than its size was stored")
	}
	list, err := objs.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != "m/a.gguf" || list[0].Size != 5 {
		t.Errorf("List = %+v, want m/a.gguf alone (the link not followed, no partial or hidden file)", list)
	}
	if _, err := objs.Stat(ctx, "missing"); !errors.Is(err, ErrObjectNotFound) {
		t.Errorf("Stat(missing) = %v", err)
	}
	if err := objs.Delete(ctx, "m/a.gguf"); err != nil {
		t.Fatal(err)
	}
	if err := objs.Delete(ctx, "m/a.gguf"); err != nil {
		t.Errorf("deleting a missing object: %v", err)
	}
}
