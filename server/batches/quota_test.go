package batches

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// gatedReader gives size bytes, then waits at its gate (telling arrived) before its end.
type gatedReader struct {
	size    int
	arrived chan struct{}
	gate    <-chan struct{}
	once    sync.Once
}

func (r *gatedReader) Read(p []byte) (int, error) {
	if r.size == 0 {
		r.once.Do(func() { close(r.arrived) })
		<-r.gate
		return 0, io.EOF
	}
	k := min(len(p), r.size)
	for i := range k {
		p[i] = 'u'
	}
	r.size -= k
	return k, nil
}

// diskBytes sums the sizes of everything in dir (stored files and uploads being written).
func diskBytes(t *testing.T, dir string) int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range entries {
		info, err := e.Info()
		if err == nil {
			n += info.Size()
		}
	}
	return n
}

// TestConcurrentUploadsStayWithinTheQuota: uploads running at once that together exceed
// --files-max-bytes never take more than the quota on disk (each reserves its bytes before
// writing them); the ones that do not fit fail with ErrFilesQuota (413 files_quota_exceeded)
// and give their reservation back, so what is left stays usable to the byte.
func TestConcurrentUploadsStayWithinTheQuota(t *testing.T) {
	const quota, uploads, size = 1 << 20, 8, 300_000 // 2.4 MB asked of a 1 MiB store
	ctx := context.Background()
	svc, st := fileService(t, Config{Files: FilesConfig{MaxBytes: quota}})
	dir := svc.cfg.Files.Dir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	type result struct {
		u   *Upload
		err error
	}
	readers := make([]*gatedReader, uploads)
	results := make([]chan result, uploads)
	for i := range uploads {
		readers[i] = &gatedReader{size: size, arrived: make(chan struct{}), gate: gate}
		results[i] = make(chan result, 1)
		go func() {
			u, err := svc.Receive(ctx, readers[i])
			results[i] <- result{u, err}
		}()
	}
	// Every upload has either written all its bytes (and waits at its gate) or failed.
	var failed []result
	ended := make([]bool, uploads)
	for i := range uploads {
		select {
		case <-readers[i].arrived:
		case r := <-results[i]:
			failed, ended[i] = append(failed, r), true
		case <-time.After(time.Minute):
			t.Fatalf("upload %d neither wrote its bytes nor failed", i)
		}
	}
	peak := diskBytes(t, dir)
	t.Logf("%d bytes on disk with every upload written or refused (%d refused so far)", peak, len(failed))
	if got := peak; got > quota {
		t.Fatalf("%d bytes on disk while %d uploads of %d bytes run, over the %d-byte quota", got, uploads, size, quota)
	}
	close(gate)
	var stored int64
	committed := 0
	for i := range uploads {
		if ended[i] {
			continue
		}
		var r result
		select {
		case r = <-results[i]:
		case <-time.After(time.Minute):
			t.Fatalf("upload %d never ended", i)
		}
		if r.err != nil {
			failed = append(failed, r)
			continue
		}
		f, err := r.u.Commit(ctx, NewFile{Filename: fmt.Sprintf("u%d", i), Purpose: "batch"})
		if err != nil {
			t.Fatalf("commit of an upload that was let write: %v", err)
		}
		stored += f.Bytes
		committed++
	}
	if len(failed)+committed != uploads || len(failed) == 0 {
		t.Fatalf("%d failed, %d stored of %d; want some refused", len(failed), committed, uploads)
	}
	for _, r := range failed {
		if r.err != nil && !errors.Is(r.err, ErrFilesQuota) {
			t.Errorf("a refused upload failed with %v, want ErrFilesQuota", r.err)
		}
		if r.err == nil {
			t.Errorf("an upload ended with no error before its reader did")
		}
	}
	t.Logf("%d uploads stored (%d bytes), %d refused", committed, stored, len(failed))
	used, err := st.FilesBytes(ctx)
	if err != nil || used != stored || used > quota {
		t.Fatalf("stored %d bytes (%v), committed %d; quota %d", used, err, stored, quota)
	}
	if got := diskBytes(t, dir); got != used {
		t.Errorf("%d bytes on disk, %d stored", got, used)
	}
	// Nothing is still reserved: the rest fits exactly, one byte more does not.
	left := quota - used
	if _, err := svc.CreateFile(ctx, NewFile{Filename: "over", Purpose: "batch", Content: strings.NewReader(strings.Repeat("x", int(left)+1))}); !errors.Is(err, ErrFilesQuota) {
		t.Fatalf("%d bytes into %d free: %v, want ErrFilesQuota", left+1, left, err)
	}
	if _, err := svc.CreateFile(ctx, NewFile{Filename: "rest", Purpose: "batch", Content: strings.NewReader(strings.Repeat("x", int(left)))}); err != nil {
		t.Fatalf("%d bytes into %d free: %v", left, left, err)
	}
	if names := dirNames(t, dir); len(names) != committed+1 {
		t.Errorf("the files folder holds %v, want %d files", names, committed+1)
	}
}
