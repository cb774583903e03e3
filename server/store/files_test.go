package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"
)

func sampleFile(id string, created time.Time, bytes int64) File {
	return File{ID: id, Filename: id + ".jsonl", Purpose: "batch", Bytes: bytes, CreatedAt: created}
}

func TestFileRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	created := time.Date(2026, 3, 4, 5, 6, 7, 800, time.UTC)
	tests := []struct {
		name string
		in   File
	}{
		{"never expires", sampleFile("file-a", created, 10)},
		{"expires", File{ID: "file-b", Filename: "notes.txt", Purpose: "user_data", Bytes: 0, CreatedAt: created,
			ExpiresAt: created.Add(time.Hour)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.InsertFile(ctx, tt.in, 0); err != nil {
				t.Fatalf("InsertFile: %v", err)
			}
			got, err := s.File(ctx, tt.in.ID)
			if err != nil {
				t.Fatalf("File: %v", err)
			}
			if !reflect.DeepEqual(got, tt.in) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, tt.in)
			}
			if ok, err := s.HasFile(ctx, tt.in.ID); !ok || err != nil {
				t.Errorf("HasFile = %v, %v", ok, err)
			}
		})
	}
	if err := s.InsertFile(ctx, sampleFile("file-a", created, 1), 0); err == nil {
		t.Error("a duplicate id was stored")
	}
	if _, err := s.File(ctx, "file-missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("File of a missing id: %v, want ErrNotFound", err)
	}
}

func TestFileQuota(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	now := time.Now()
	tests := []struct {
		id    string
		bytes int64
		quota int64
		ok    bool
	}{
		{"file-1", 60, 100, true},
		{"file-2", 41, 100, false}, // 101 > 100
		{"file-3", 40, 100, true},  // exactly 100
		{"file-4", 1, 100, false},
		{"file-5", 0, 100, true},  // an empty file always fits
		{"file-6", 1000, 0, true}, // 0: no quota
	}
	for _, tt := range tests {
		err := s.InsertFile(ctx, sampleFile(tt.id, now, tt.bytes), tt.quota)
		if tt.ok != (err == nil) || (!tt.ok && !errors.Is(err, ErrQuota)) {
			t.Errorf("%s (%d bytes, quota %d): err = %v, want ok %v", tt.id, tt.bytes, tt.quota, err, tt.ok)
		}
	}
	if used, err := s.FilesBytes(ctx); err != nil || used != 1100 {
		t.Errorf("FilesBytes = %d, %v; want 1100", used, err)
	}
}

func TestFilesListAndExpiry(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		f := sampleFile(fmt.Sprintf("file-%d", i), base.Add(time.Duration(i)*time.Minute), 1)
		if i%2 == 1 {
			f.Purpose = "user_data"
		}
		if i == 2 {
			f.ExpiresAt = base.Add(time.Hour)
		}
		if err := s.InsertFile(ctx, f, 0); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(fs []File) []string {
		out := []string{}
		for _, f := range fs {
			out = append(out, f.ID)
		}
		return out
	}
	tests := []struct {
		name string
		q    FileQuery
		want []string
	}{
		{"newest first", FileQuery{Limit: 10}, []string{"file-4", "file-3", "file-2", "file-1", "file-0"}},
		{"oldest first, a page", FileQuery{Limit: 2, Ascending: true}, []string{"file-0", "file-1"}},
		{"after, newest first", FileQuery{Limit: 2, After: "file-3"}, []string{"file-2", "file-1"}},
		{"after, oldest first", FileQuery{Limit: 10, After: "file-3", Ascending: true}, []string{"file-4"}},
		{"purpose", FileQuery{Limit: 10, Purpose: "user_data"}, []string{"file-3", "file-1"}},
		{"unknown after starts over", FileQuery{Limit: 1, After: "file-x"}, []string{"file-4"}},
		{"expired hidden", FileQuery{Limit: 10, Now: base.Add(2 * time.Hour)}, []string{"file-4", "file-3", "file-1", "file-0"}},
		{"not yet expired", FileQuery{Limit: 10, Now: base.Add(time.Minute)}, []string{"file-4", "file-3", "file-2", "file-1", "file-0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Files(ctx, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ids(got), tt.want) {
				t.Errorf("got %v, want %v", ids(got), tt.want)
			}
		})
	}
	for _, tt := range []struct {
		now  time.Time
		want []string
	}{{base.Add(59 * time.Minute), nil}, {base.Add(time.Hour), []string{"file-2"}}} {
		got, err := s.ExpiredFiles(ctx, tt.now, 10)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ExpiredFiles(%v) = %v, %v; want %v", tt.now, got, err, tt.want)
		}
	}
	if err := s.DeleteFile(ctx, "file-2"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteFile(ctx, "file-2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second delete: %v, want ErrNotFound", err)
	}
	if ok, _ := s.HasFile(ctx, "file-2"); ok {
		t.Error("a deleted file is still there")
	}
}
