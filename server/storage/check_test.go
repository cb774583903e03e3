package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/superfluid/superfluid/server/storage/s3test"
)

const testSecret = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"

func s3Spec(srv *s3test.Server, accessKey, secret, bucket string) Spec {
	return Spec{Name: "bucket-" + accessKey + "-" + bucket + "-" + secret[:4], Kind: KindS3, Endpoint: srv.URL,
		Bucket: bucket, Region: "us-east-1", Prefix: "team", AccessKey: accessKey, Secret: &secret}
}

func TestCheckS3(t *testing.T) {
	ctx := context.Background()
	var logs bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(old) })

	srv := s3test.Start(t, "AKIDTEST", testSecret, "models")
	s := openService(t)

	good, err := s.Create(ctx, By{}, s3Spec(srv, "AKIDTEST", testSecret, "models"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Check(ctx, good.ID)
	if err != nil || !res.OK || res.Reason != "" || res.Latency <= 0 {
		t.Fatalf("check of the good bucket = %+v, %v; want ok", res, err)
	}

	// Usage counts what is stored under the prefix, and the probe left nothing.
	objs, err := s.Open(ctx, good.ID)
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"a/one.gguf": "12345", "two.bin": "1234567890"} {
		if err := objs.Put(ctx, name, strings.NewReader(body), int64(len(body))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := objs.Stat(ctx, "missing.gguf"); !errors.Is(err, ErrObjectNotFound) {
		t.Errorf("Stat(missing) = %v, want ErrObjectNotFound", err)
	}
	if _, err := objs.Get(ctx, "missing.gguf"); !errors.Is(err, ErrObjectNotFound) {
		t.Errorf("Get(missing) = %v, want ErrObjectNotFound", err)
	}
	u, err := s.Usage(ctx, good.ID)
	if err != nil || u.Bytes != 15 || u.Objects != 2 {
		t.Errorf("usage = %+v, %v; want 15 bytes in 2 objects", u, err)
	}
	if info, err := objs.Stat(ctx, "a/one.gguf"); err != nil || info.Size != 5 {
		t.Errorf("Stat = %+v, %v", info, err)
	}

	for _, c := range []struct {
		name, accessKey, secret, bucket, want string
	}{
		{"wrong access key", "AKIDOTHER", testSecret, "models", "InvalidAccessKeyId"},
		{"wrong secret", "AKIDTEST", "not-the-secret-9f8e7d6c", "models", "SignatureDoesNotMatch"},
		{"missing bucket", "AKIDTEST", testSecret, "nobucket", "NoSuchBucket"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, err := s.Create(ctx, By{}, s3Spec(srv, c.accessKey, c.secret, c.bucket))
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.Check(ctx, st.ID)
			if err != nil {
				t.Fatal(err)
			}
			if res.OK || !strings.Contains(res.Reason, c.want) {
				t.Errorf("check = %+v, want a failure naming %s", res, c.want)
			}
			listed, _ := s.Get(ctx, st.ID)
			raw, _ := json.Marshal(struct {
				Storage Storage
				Result  CheckResult
			}{listed, res})
			if strings.Contains(string(raw), c.secret) || strings.Contains(res.Reason, c.secret) {
				t.Errorf("the secret is in the reason or the storage's JSON: %s", raw)
			}
			if _, err := s.Usage(ctx, st.ID); !errors.Is(err, ErrUnavailable) || strings.Contains(err.Error(), c.secret) {
				t.Errorf("usage error = %v, want a failure without the secret", err)
			}
		})
	}
	if strings.Contains(logs.String(), testSecret) || strings.Contains(logs.String(), "not-the-secret") {
		t.Errorf("the log carries a secret:\n%s", logs.String())
	}
}

// mountTmpfs mounts a tmpfs at dir (read-only when ro) or skips the test when this process may
// not mount.
func mountTmpfs(t *testing.T, dir string, ro bool) {
	t.Helper()
	flags := uintptr(0)
	if ro {
		flags = syscall.MS_RDONLY
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", flags, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v): needs root with CAP_SYS_ADMIN", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
}

func TestCheckFolders(t *testing.T) {
	ctx := context.Background()
	s := openService(t)
	check := func(t *testing.T, kind, dir string) CheckResult {
		t.Helper()
		st, err := s.Create(ctx, By{}, Spec{Name: filepath.Base(t.Name()), Kind: kind, Path: dir})
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Check(ctx, st.ID)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	t.Run("writable folder", func(t *testing.T) {
		dir := t.TempDir()
		if res := check(t, KindLocal, dir); !res.OK || res.Reason != "" {
			t.Errorf("check = %+v, want ok", res)
		}
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Errorf("the probe left %v", left)
		}
	})
	// As root, a chmod'ed folder is still writable; a folder "under a file" cannot exist.
	t.Run("path under a file", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(file, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if res := check(t, KindLocal, filepath.Join(file, "models")); res.OK || !strings.Contains(res.Reason, "not a directory") {
			t.Errorf("check = %+v, want a failure: not a directory", res)
		}
	})
	t.Run("missing folder", func(t *testing.T) {
		if res := check(t, KindLocal, filepath.Join(t.TempDir(), "nope")); res.OK || !strings.Contains(res.Reason, "no such file") {
			t.Errorf("check = %+v, want a failure", res)
		}
	})
	t.Run("nfs not mounted", func(t *testing.T) {
		res := check(t, KindNFS, t.TempDir())
		if !res.OK || !strings.Contains(res.Reason, "not a mount point") {
			t.Errorf("check = %+v, want ok with a warning", res)
		}
	})
	t.Run("read-only mount", func(t *testing.T) {
		dir := t.TempDir()
		mountTmpfs(t, dir, true)
		if res := check(t, KindSMB, dir); res.OK || !strings.Contains(res.Reason, "read-only file system") {
			t.Errorf("check = %+v, want a failure: read-only file system", res)
		}
	})
	t.Run("nfs mounted", func(t *testing.T) {
		dir := t.TempDir()
		mountTmpfs(t, dir, false)
		if res := check(t, KindNFS, dir); !res.OK || res.Reason != "" {
			t.Errorf("check = %+v, want ok without a warning", res)
		}
	})
}

func TestUnescapeMount(t *testing.T) {
	if got := unescapeMount(`/mnt/my\040share`); got != "/mnt/my share" {
		t.Errorf("unescape = %q", got)
	}
	if got := unescapeMount(`/mnt/a\0`); got != `/mnt/a\0` {
		t.Errorf("a short escape = %q", got)
	}
}
