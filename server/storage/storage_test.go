package storage

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/server/store"
)

func openService(t *testing.T) *Service {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "superfluid.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return New(Config{Store: st})
}

func ptr(s string) *string { return &s }

// recorder collects audit entries.
type recorder struct{ entries []string }

func (r *recorder) by() By {
	return By{Record: func(_ context.Context, action, target string, detail map[string]any) error {
		raw, _ := json.Marshal(detail)
		r.entries = append(r.entries, action+" "+target+" "+string(raw))
		return nil
	}}
}

func TestCreateListUpdateDelete(t *testing.T) {
	ctx := context.Background()
	s := openService(t)
	var audit recorder
	dir := t.TempDir()

	local, err := s.Create(ctx, audit.by(), Spec{Name: "scratch", Kind: "local", Path: dir, Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	bucket, err := s.Create(ctx, audit.by(), Spec{Name: "models-s3", Kind: "s3", Endpoint: "http://127.0.0.1:9",
		Bucket: "models", Region: "us-east-1", AccessKey: "AK", Secret: ptr("s3cr3t-value"), People: []string{"person-a", "person-a"}})
	if err != nil {
		t.Fatal(err)
	}
	if !bucket.HasSecret || bucket.Secret != "" || local.HasSecret {
		t.Errorf("has_password: s3 %v (secret field %q), local %v", bucket.HasSecret, bucket.Secret, local.HasSecret)
	}
	if len(bucket.People) != 1 {
		t.Errorf("people = %v, want the duplicate folded", bucket.People)
	}

	if _, err := s.Create(ctx, By{}, Spec{Name: "scratch", Kind: "local", Path: dir}); !errors.Is(err, ErrNameTaken) {
		t.Errorf("a second %q: %v, want ErrNameTaken", "scratch", err)
	}

	mine, err := s.ListFor(ctx, "person-a")
	if err != nil || len(mine) != 2 {
		t.Errorf("ListFor(person-a) = %d storages, %v; want 2", len(mine), err)
	}
	theirs, _ := s.ListFor(ctx, "person-b")
	if len(theirs) != 1 || theirs[0].ID != local.ID {
		t.Errorf("ListFor(person-b) = %v, want the shared one only", theirs)
	}

	// Update without a password keeps it; with "" clears it.
	up, err := s.Update(ctx, audit.by(), bucket.ID, Spec{Name: "models-s3", Kind: "s3", Endpoint: "http://127.0.0.1:9",
		Bucket: "models2", AccessKey: "AK"})
	if err != nil {
		t.Fatal(err)
	}
	if secret, _ := s.cfg.Store.StorageSecret(ctx, bucket.ID); !up.HasSecret || secret != "s3cr3t-value" || up.Bucket != "models2" {
		t.Errorf("after an update without password: has %v, stored %q, bucket %q", up.HasSecret, secret, up.Bucket)
	}
	up, err = s.Update(ctx, audit.by(), bucket.ID, Spec{Name: "models-s3", Kind: "s3", Endpoint: "http://127.0.0.1:9",
		Bucket: "models2", AccessKey: "AK", Secret: ptr("")})
	if err != nil || up.HasSecret {
		t.Errorf("after password \"\": has_password %v, %v", up.HasSecret, err)
	}
	if _, err := s.Update(ctx, By{}, "storage-nope", Spec{Name: "x", Kind: "local", Path: dir}); !errors.Is(err, ErrNotFound) {
		t.Errorf("update of an unknown id: %v", err)
	}
	if _, err := s.Update(ctx, By{}, bucket.ID, Spec{Name: "scratch", Kind: "local", Path: dir}); !errors.Is(err, ErrNameTaken) {
		t.Errorf("rename onto another's name: %v", err)
	}

	if _, err := s.Delete(ctx, audit.by(), local.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, local.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("after delete: %v", err)
	}
	if _, err := s.Delete(ctx, By{}, local.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}

	if len(audit.entries) != 5 {
		t.Errorf("audit has %d entries, want 5: %v", len(audit.entries), audit.entries)
	}
	for _, e := range audit.entries {
		if strings.Contains(e, "s3cr3t") {
			t.Errorf("audit entry carries the secret: %s", e)
		}
	}
}

func TestSpecRefusals(t *testing.T) {
	s := openService(t)
	cases := []struct {
		spec  Spec
		field string
	}{
		{Spec{Name: "", Kind: "local", Path: "/tmp"}, "name"},
		{Spec{Name: "a", Kind: "ftp", Path: "/tmp"}, "kind"},
		{Spec{Name: "a", Kind: "local", Path: "relative/dir"}, "path"},
		{Spec{Name: "a", Kind: "nfs"}, "path"},
		{Spec{Name: "a", Kind: "local", Path: "/tmp", Bucket: "b"}, "endpoint"},
		{Spec{Name: "a", Kind: "s3", Bucket: "b"}, "endpoint"},
		{Spec{Name: "a", Kind: "s3", Endpoint: "ftp://host", Bucket: "b"}, "endpoint"},
		{Spec{Name: "a", Kind: "s3", Endpoint: "https://host/path", Bucket: "b"}, "endpoint"},
		{Spec{Name: "a", Kind: "s3", Endpoint: "https://host"}, "bucket"},
		{Spec{Name: "a", Kind: "s3", Endpoint: "https://host", Bucket: "b", Prefix: "../up"}, "prefix"},
		{Spec{Name: "a", Kind: "s3", Endpoint: "https://host", Bucket: "b", Path: "/x"}, "path"},
		{Spec{Name: "a", Kind: "local", Path: "/tmp", People: []string{""}}, "people"},
		{Spec{Name: "a", Kind: "s3", Endpoint: "https://host", Bucket: "b", Secret: ptr("a\nb")}, "password"},
	}
	for _, c := range cases {
		_, err := s.Create(context.Background(), By{}, c.spec)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v, want a FieldError on %q", c.spec, err, c.field)
		}
	}
}
