package hf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/models/hf/hftest"
)

const testRepo = "o/m-GGUF"

// testData returns n pseudo-random bytes.
func testData(n int, seed byte) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{seed}).Read(b)
	return b
}

// fixture is a fake Hub holding one file, and a client for it.
type fixture struct {
	srv  *hftest.Server
	c    *Client
	data []byte
	name string
	res  *Resolved
	dir  string
}

func newFixture(t *testing.T, size int, mod func(*Config)) *fixture {
	t.Helper()
	f := &fixture{srv: hftest.New(), data: testData(size, 1), name: "M-Q4_K_M.gguf", dir: t.TempDir()}
	t.Cleanup(f.srv.Close)
	f.srv.AddFile(testRepo, f.name, f.data)
	cfg := testConfig(f.srv)
	if mod != nil {
		mod(&cfg)
	}
	f.c = New(cfg)
	res, err := f.c.Resolve(context.Background(), Ref{Repo: testRepo, Quant: "Q4_K_M"})
	if err != nil {
		t.Fatal(err)
	}
	f.res = res
	return f
}

func (f *fixture) final() string   { return filepath.Join(f.dir, f.name) }
func (f *fixture) partial() string { return f.final() + ".partial" }
func (f *fixture) sent() int64     { return f.srv.BytesSent(testRepo, f.name) }
func (f *fixture) reqs() int       { return f.srv.Requests(testRepo, f.name) }
func (f *fixture) ranges() []string {
	return f.srv.Ranges(testRepo, f.name)
}
func (f *fixture) faults() *hftest.Faults { return f.srv.Faults(testRepo, f.name) }

// download runs Download, recording progress.
func (f *fixture) download(t *testing.T, ctx context.Context) ([]string, []Progress, error) {
	t.Helper()
	var mu sync.Mutex
	var prog []Progress
	paths, err := f.c.Download(ctx, f.res, f.dir, func(p Progress) {
		mu.Lock()
		prog = append(prog, p)
		mu.Unlock()
	})
	return paths, prog, err
}

// mustComplete checks a successful download: the final file holds the data,
// no partial remains, and progress ended in "done".
func (f *fixture) mustComplete(t *testing.T, paths []string, prog []Progress, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("Download: %v", err)
	}
	if !slices.Equal(paths, []string{f.final()}) {
		t.Fatalf("paths = %q, want %q", paths, f.final())
	}
	got, err := os.ReadFile(f.final())
	if err != nil || !bytes.Equal(got, f.data) {
		t.Fatalf("final file: %d bytes, %v; want the %d served bytes", len(got), err, len(f.data))
	}
	if _, err := os.Stat(f.partial()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("partial left behind: %v", err)
	}
	if len(prog) == 0 {
		t.Fatal("no progress")
	}
	last := prog[len(prog)-1]
	want := Progress{File: f.name, Digest: "sha256:" + f.srv.SHA256(testRepo, f.name), Status: StatusDone,
		Total: int64(len(f.data)), Completed: int64(len(f.data))}
	if last != want {
		t.Errorf("last progress = %+v, want %+v", last, want)
	}
}

func TestDownload(t *testing.T) {
	f := newFixture(t, 4<<20, nil)
	f.dir = filepath.Join(f.dir, "models", "new") // created by Download
	paths, prog, err := f.download(t, context.Background())
	f.mustComplete(t, paths, prog, err)
	if st, err := os.Stat(f.dir); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("dir: %v, %v; want mode 0755", st, err)
	}
	if f.reqs() != 1 || f.sent() != int64(len(f.data)) {
		t.Errorf("requests = %d, bytes sent = %d; want 1 and %d", f.reqs(), f.sent(), len(f.data))
	}
	var statuses []string
	for _, p := range prog {
		if len(statuses) == 0 || statuses[len(statuses)-1] != p.Status {
			statuses = append(statuses, p.Status)
		}
	}
	if !slices.Equal(statuses, []string{StatusPulling, StatusVerifying, StatusDone}) {
		t.Errorf("statuses = %q", statuses)
	}
	if prog[0].Completed != 0 {
		t.Errorf("first progress %+v", prog[0])
	}

	// Present with the right size: verified by hashing, not fetched again.
	paths, prog, err = f.download(t, context.Background())
	f.mustComplete(t, paths, prog, err)
	if f.reqs() != 1 {
		t.Errorf("requests = %d after a second Download, want 1", f.reqs())
	}

	// Present but corrupt: fetched again.
	bad := slices.Clone(f.data)
	bad[100] ^= 1
	if err := os.WriteFile(f.final(), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	paths, prog, err = f.download(t, context.Background())
	f.mustComplete(t, paths, prog, err)
	if f.reqs() != 2 {
		t.Errorf("requests = %d, want 2 after a corrupt file", f.reqs())
	}
}

func TestDownloadSplit(t *testing.T) {
	srv := hftest.New()
	defer srv.Close()
	var parts [][]byte
	for k := 3; k >= 1; k-- { // added out of order
		d := testData(300<<10, byte(k))
		parts = append([][]byte{d}, parts...)
		srv.AddFile("o/s", fmt.Sprintf("Q4_K_M/M-Q4_K_M-%05d-of-00003.gguf", k), d)
	}
	c := New(testConfig(srv))
	res, err := c.Resolve(context.Background(), Ref{Repo: "o/s"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	seen := map[string]bool{}
	paths, err := c.Download(context.Background(), res, dir, func(p Progress) {
		if p.Status == StatusDone {
			seen[p.File] = true
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for k := range 3 {
		want := filepath.Join(dir, fmt.Sprintf("M-Q4_K_M-%05d-of-00003.gguf", k+1))
		if paths[k] != want {
			t.Errorf("paths[%d] = %q, want %q", k, paths[k], want)
		}
		if got, _ := os.ReadFile(want); !bytes.Equal(got, parts[k]) {
			t.Errorf("part %d content differs", k+1)
		}
	}
	if len(seen) != 3 {
		t.Errorf("done for %d files, want 3", len(seen))
	}
}

func TestDownloadResumesAfterFault(t *testing.T) {
	const at = 1<<20 + 12345
	tests := []struct {
		name string
		arm  func(*hftest.Faults)
	}{
		{"connection dropped", func(fl *hftest.Faults) { fl.DropAt.Store(at) }},
		{"stall", func(fl *hftest.Faults) { fl.StallAt.Store(at) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, 3<<20, func(c *Config) { c.StallTimeout = 200 * time.Millisecond })
			tt.arm(f.faults())
			paths, prog, err := f.download(t, context.Background())
			f.mustComplete(t, paths, prog, err)
			want := []string{"", fmt.Sprintf("bytes=%d-", at)}
			if got := f.ranges(); !slices.Equal(got, want) {
				t.Errorf("Range headers = %q, want %q", got, want)
			}
			if sent, size := f.sent(), int64(len(f.data)); sent > size+64<<10 {
				t.Errorf("sent %d bytes for a %d-byte file: the resume re-sent data", sent, size)
			}
		})
	}
}

func TestDownloadIgnoredRange(t *testing.T) {
	f := newFixture(t, 2<<20, nil)
	if err := os.WriteFile(f.partial(), f.data[:1<<20], 0o644); err != nil {
		t.Fatal(err)
	}
	f.faults().IgnoreRange.Store(true) // answers 200 with the whole file
	paths, prog, err := f.download(t, context.Background())
	f.mustComplete(t, paths, prog, err)
	if f.reqs() != 1 {
		t.Errorf("requests = %d, want 1", f.reqs())
	}
}

func TestDownloadWrongBytes(t *testing.T) {
	f := newFixture(t, 3<<20, nil)
	f.faults().WrongBytes.Store(true)
	_, _, err := f.download(t, context.Background())
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("Download = %v, want ErrChecksum", err)
	}
	if !strings.Contains(err.Error(), "pull again") {
		t.Errorf("error %q does not say what to do", err)
	}
	left, _ := os.ReadDir(f.dir)
	left = slices.DeleteFunc(left, func(e fs.DirEntry) bool { return e.Name() == ".locks" }) // the lock stays, by design
	if len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

func TestDownloadStatus(t *testing.T) {
	tests := []struct {
		status   int
		wantErr  error
		wantReqs int
	}{
		{500, nil, 2},
		{503, nil, 2},
		{429, nil, 2},
		{404, ErrNotFound, 1},
		{403, ErrUnauthorized, 1},
		{400, nil, 1}, // an error, but no sentinel
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			f := newFixture(t, 1<<20, nil)
			f.faults().Status.Store(int64(tt.status))
			paths, prog, err := f.download(t, context.Background())
			switch {
			case tt.wantReqs == 2:
				f.mustComplete(t, paths, prog, err)
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Errorf("Download = %v, want %v", err, tt.wantErr)
			case err == nil:
				t.Error("Download succeeded")
			}
			if f.reqs() != tt.wantReqs {
				t.Errorf("requests = %d, want %d", f.reqs(), tt.wantReqs)
			}
		})
	}
}

func TestDownloadTokenNotSentToCDN(t *testing.T) {
	f := newFixture(t, 1<<20, func(c *Config) { c.Token = "hf_secret" })
	f.srv.RequireToken(testRepo, "hf_secret")
	paths, prog, err := f.download(t, context.Background())
	f.mustComplete(t, paths, prog, err)
	endpoint, cdn := f.srv.AuthSeen()
	if len(endpoint) == 0 {
		t.Error("endpoint saw no token")
	}
	for _, a := range endpoint {
		if a != "Bearer hf_secret" {
			t.Errorf("endpoint saw %q", a)
		}
	}
	if len(cdn) != 0 {
		t.Errorf("CDN saw Authorization %q", cdn)
	}
}

// hookFile wraps a partial file to observe or fail writes.
type hookFile struct {
	partialFile
	written int64
	before  func(total int64) error // before each write, with the total it would reach
	after   func(total int64)       // after each write
}

func (h *hookFile) Write(p []byte) (int, error) {
	if h.before != nil {
		if err := h.before(h.written + int64(len(p))); err != nil {
			return 0, err
		}
	}
	n, err := h.partialFile.Write(p)
	h.written += int64(n)
	if h.after != nil {
		h.after(h.written)
	}
	return n, err
}

func hook(c *Client, set func(*hookFile)) {
	c.openPartial = func(name string) (partialFile, error) {
		pf, err := openPartialFile(name)
		if err != nil {
			return nil, err
		}
		h := &hookFile{partialFile: pf}
		set(h)
		return h, nil
	}
}

func TestDownloadCancelKeepsPartial(t *testing.T) {
	f := newFixture(t, 4<<20, nil)
	f.faults().StallAt.Store(2 << 20) // the first attempt never completes
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hook(f.c, func(h *hookFile) {
		h.after = func(total int64) {
			if total >= 1<<20 {
				cancel()
			}
		}
	})
	_, _, err := f.download(t, ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Download = %v, want context.Canceled", err)
	}
	st, err := os.Stat(f.partial())
	if err != nil {
		t.Fatalf("partial: %v", err)
	}
	have := st.Size()
	if have < 1<<20 || have > 2<<20 {
		t.Fatalf("partial holds %d bytes", have)
	}
	if _, err := os.Stat(f.final()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("final file exists: %v", err)
	}

	f.c.openPartial = openPartialFile
	paths, prog, err := f.download(t, context.Background())
	f.mustComplete(t, paths, prog, err)
	// The first attempt sent at most 2 MiB (the stall); the resume sends
	// only what the partial lacked.
	if got, limit := f.sent(), 2<<20+int64(len(f.data))-have; got > limit {
		t.Errorf("sent %d bytes in all, want at most %d", got, limit)
	}
	if f.reqs() != 2 {
		t.Errorf("requests = %d, want 2", f.reqs())
	}
	if r := f.ranges(); r[len(r)-1] != fmt.Sprintf("bytes=%d-", have) {
		t.Errorf("resume asked for %q, want bytes=%d-", r[len(r)-1], have)
	}
	// Progress is coalesced: on a busy machine the first report may come later than the start,
	// but never below what the partial held.
	if prog[0].Completed < have {
		t.Errorf("first progress on resume = %+v, want Completed at least %d", prog[0], have)
	}
}

func TestDownloadResumesKilledRun(t *testing.T) {
	f := newFixture(t, 3<<20, nil)
	const have = 1<<20 + 7
	if err := os.WriteFile(f.partial(), f.data[:have], 0o644); err != nil {
		t.Fatal(err)
	}
	paths, prog, err := f.download(t, context.Background())
	f.mustComplete(t, paths, prog, err)
	if got := f.ranges(); !slices.Equal(got, []string{fmt.Sprintf("bytes=%d-", have)}) {
		t.Errorf("Range headers = %q", got)
	}
	if got, want := f.sent(), int64(len(f.data)-have); got != want {
		t.Errorf("sent %d bytes, want %d", got, want)
	}
	if prog[0].Completed < have { // coalesced progress: see above
		t.Errorf("first progress = %+v, want Completed at least %d", prog[0], have)
	}
}

func TestDownloadCompletePartial(t *testing.T) {
	f := newFixture(t, 1<<20, nil)
	if err := os.WriteFile(f.partial(), f.data, 0o644); err != nil {
		t.Fatal(err)
	}
	paths, prog, err := f.download(t, context.Background())
	f.mustComplete(t, paths, prog, err)
	if f.reqs() != 0 {
		t.Errorf("requests = %d for a complete partial, want 0", f.reqs())
	}
}

func TestDownloadDiskFull(t *testing.T) {
	f := newFixture(t, 3<<20, nil)
	hook(f.c, func(h *hookFile) {
		h.before = func(total int64) error {
			if total > 1<<20 {
				return &fs.PathError{Op: "write", Path: "x.partial", Err: syscall.ENOSPC}
			}
			return nil
		}
	})
	_, _, err := f.download(t, context.Background())
	if !errors.Is(err, ErrDiskFull) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Download = %v, want ErrDiskFull", err)
	}
	if !strings.Contains(err.Error(), "free disk space") || !strings.Contains(err.Error(), "bytes) more are needed") {
		t.Errorf("error %q does not say how much space to free", err)
	}
	if f.reqs() != 1 {
		t.Errorf("requests = %d, want 1 (no retry on a disk error)", f.reqs())
	}
}

func TestDownloadShared(t *testing.T) {
	f := newFixture(t, 3<<20, nil)
	// Hold the first write until the second caller has joined the flight.
	joined := func() bool {
		f.c.mu.Lock()
		defer f.c.mu.Unlock()
		for _, fl := range f.c.flights {
			return fl.waiters == 2
		}
		return false
	}
	hook(f.c, func(h *hookFile) {
		h.before = func(int64) error {
			for i := 0; i < 5000 && !joined(); i++ {
				time.Sleep(time.Millisecond)
			}
			return nil
		}
	})
	type result struct {
		paths []string
		prog  []Progress
		err   error
	}
	results := make(chan result, 2)
	for range 2 {
		go func() {
			p, prog, err := f.download(t, context.Background())
			results <- result{p, prog, err}
		}()
	}
	for range 2 {
		r := <-results
		f.mustComplete(t, r.paths, r.prog, r.err)
	}
	if f.reqs() != 1 || f.sent() != int64(len(f.data)) {
		t.Errorf("requests = %d, sent = %d; want one download of %d bytes", f.reqs(), f.sent(), len(f.data))
	}
}

func TestParseContentRange(t *testing.T) {
	tests := []struct {
		in           string
		start, total int64
		ok           bool
	}{
		{"bytes 100-199/200", 100, 200, true},
		{"bytes 0-0/*", 0, -1, true},
		{"bytes */5000", -1, 5000, true},
		{"bytes x-1/2", 0, 0, false},
		{"items 0-1/2", 0, 0, false},
		{"", 0, 0, false},
	}
	for _, tt := range tests {
		start, total, ok := parseContentRange(tt.in)
		if start != tt.start || total != tt.total || ok != tt.ok {
			t.Errorf("parseContentRange(%q) = %d, %d, %v", tt.in, start, total, ok)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"3", 3 * time.Second},
		{"-1", 0},
		{"86400", maxRetryAfter},
		{"Wed, 21 Oct 2015 07:28:00 GMT", 0}, // in the past
		{"soon", 0},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.in); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestDownloadReportsBytesBeforeAStall: the bytes that arrived just before the connection went
// quiet are reported while it is quiet, not only when data flows again (a progress bar that
// sat at 0% during a stall at 40% was the bug).
func TestDownloadReportsBytesBeforeAStall(t *testing.T) {
	f := newFixture(t, 1<<20, func(c *Config) { c.StallTimeout = time.Minute })
	cut := int64(len(f.data) * 4 / 10)
	f.srv.Faults(testRepo, f.name).StallAt.Store(cut)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reported := make(chan int64, 100)
	go f.c.Download(ctx, f.res, f.dir, func(p Progress) {
		select {
		case reported <- p.Completed:
		default:
		}
	})
	deadline := time.After(20 * time.Second)
	for {
		select {
		case n := <-reported:
			if n >= cut {
				return
			}
		case <-deadline:
			t.Fatalf("the %d bytes before the stall were never reported", cut)
		}
	}
}
