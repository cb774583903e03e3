package store

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

// TestStorages: a storage is stored with every field but its secret, which no read returns
// (HasSecret says it is there) and only StorageSecret reads; an update keeps or replaces it;
// names are unique; a missing id is ErrNotFound.
func TestStorages(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	st := Storage{ID: "storage-1", Name: "bucket", Kind: "s3", Endpoint: "https://s3.example", Bucket: "models", Region: "eu-west-1",
		Prefix: "team", AccessKey: "AKID", Secret: "top-secret", People: []string{"person-a"}, CreatedAt: at, UpdatedAt: at}
	if err := s.InsertStorage(ctx, st); err != nil {
		t.Fatal(err)
	}
	got, err := s.StorageByID(ctx, "storage-1")
	if err != nil {
		t.Fatal(err)
	}
	want := st
	want.Secret, want.HasSecret = "", true
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read %+v, want %+v", got, want)
	}
	if list, err := s.Storages(ctx); err != nil || len(list) != 1 || list[0].Secret != "" {
		t.Fatalf("Storages = %+v, %v", list, err)
	}
	if secret, err := s.StorageSecret(ctx, "storage-1"); err != nil || secret != "top-secret" {
		t.Fatalf("StorageSecret = %q, %v", secret, err)
	}
	if err := s.InsertStorage(ctx, Storage{ID: "storage-2", Name: "bucket", Kind: "local", Path: "/x"}); !errors.Is(err, ErrStorageNameTaken) {
		t.Errorf("a second storage named bucket: %v", err)
	}

	st.Bucket, st.Secret = "other", ""
	if err := s.UpdateStorage(ctx, st, true); err != nil {
		t.Fatal(err)
	}
	if secret, _ := s.StorageSecret(ctx, "storage-1"); secret != "top-secret" {
		t.Errorf("an update keeping the secret left %q", secret)
	}
	if err := s.UpdateStorage(ctx, st, false); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.StorageByID(ctx, "storage-1"); got.HasSecret || got.Bucket != "other" {
		t.Errorf("after an update clearing the secret: %+v", got)
	}
	if err := s.UpdateStorage(ctx, Storage{ID: "storage-9", Name: "x"}, true); !errors.Is(err, ErrNotFound) {
		t.Errorf("update of a missing id: %v", err)
	}
	if err := s.DeleteStorage(ctx, "storage-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StorageByID(ctx, "storage-1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("after delete: %v", err)
	}
	if err := s.DeleteStorage(ctx, "storage-1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
}
