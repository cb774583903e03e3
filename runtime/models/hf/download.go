package hf

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/superfluid/superfluid/runtime/models/source"
)

// Progress reports a file's download state: the manager's neutral progress (source.Progress).
type Progress = source.Progress

// Progress statuses.
const (
	StatusPulling   = source.StatusPulling
	StatusVerifying = source.StatusVerifying
	StatusDone      = source.StatusDone
)

const (
	bufSize          = 1 << 20
	progressInterval = 100 * time.Millisecond
)

var bufPool = sync.Pool{New: func() any { b := make([]byte, bufSize); return &b }}

// partialFile is what a download writes into; *os.File implements it.
type partialFile interface {
	io.ReadWriteSeeker
	Truncate(size int64) error
	Stat() (fs.FileInfo, error)
	Sync() error
	Close() error
}

func openPartialFile(name string) (partialFile, error) {
	return os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
}

// Download fetches every file of r into dir (created 0755), each as
// dir/<base name>, through dir/<base>.partial with HTTP Range resume,
// hashing while writing (on resume the existing partial is hashed first),
// verifying the sha256 (and size), then renaming. It returns the final paths
// in part order. A file already present with the right size is verified by
// hashing and skipped.
//
// Concurrent calls for the same destination share one download; each gets
// progress and the result. When ctx ends Download returns ctx.Err() and
// keeps the partial file for a later call to resume.
func (c *Client) Download(ctx context.Context, r *Resolved, dir string, progress func(Progress)) ([]string, error) {
	if r == nil || len(r.Files) == 0 {
		return nil, errors.New("download: nothing resolved")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create model directory: %w", diskErr(err, 0))
	}
	rev := r.Revision
	if rev == "" {
		rev = r.Ref.revision()
	}
	paths := make([]string, 0, len(r.Files))
	seen := map[string]bool{}
	for _, f := range r.Files {
		base := path.Base(f.Path)
		if !safeRepoPath(f.Path) || strings.HasPrefix(base, ".") || !strings.HasSuffix(strings.ToLower(base), ".gguf") || !filepath.IsLocal(base) {
			return nil, fmt.Errorf("download %s: unsafe file name %q: %w", r.Ref.Repo, f.Path, ErrBadAnswer)
		}
		if seen[base] {
			return nil, fmt.Errorf("download %s: two files named %s", r.Ref.Repo, base)
		}
		seen[base] = true
		final := filepath.Join(dir, base)
		if !inside(dir, final) {
			return nil, fmt.Errorf("download %s: %q would be written outside %s: %w", r.Ref.Repo, f.Path, dir, ErrBadAnswer)
		}
		if err := c.shared(ctx, r.Ref.Repo, rev, f, final, progress); err != nil {
			return nil, err
		}
		paths = append(paths, final)
	}
	return paths, nil
}

// fetch downloads one file to final, resuming final+".partial".
func (c *Client) fetch(ctx context.Context, repo, rev string, f RemoteFile, final string, emit func(Progress)) error {
	prog := Progress{File: f.Path, Total: f.Size}
	if f.SHA256 != "" {
		prog.Digest = "sha256:" + f.SHA256
	}
	// Another process (a CLI pull beside a running server) may be writing the same partial.
	lock, err := c.lockPath(final)
	if err != nil {
		return err
	}
	unlock, err := lockFile(ctx, lock)
	if err != nil {
		return err
	}
	defer unlock()
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp

	if st, err := os.Stat(final); err == nil && st.Mode().IsRegular() && st.Size() == f.Size {
		prog.Status, prog.Completed = StatusVerifying, f.Size
		emit(prog)
		ok, err := verifyFile(ctx, final, f.SHA256, buf)
		if err != nil {
			return err
		}
		if ok {
			prog.Status = StatusDone
			emit(prog)
			return nil
		}
		// Corrupt: download again; the rename below replaces it.
	}

	partial := final + ".partial"
	pf, err := c.openPartial(partial)
	if err != nil {
		return fmt.Errorf("open %s: %w", partial, diskErr(err, f.Size))
	}
	closed := false
	defer func() {
		if !closed {
			pf.Close()
		}
	}()
	h := sha256.New()
	n, err := hashPartial(ctx, pf, h, f.Size, buf)
	if err != nil {
		return fmt.Errorf("resume %s: %w", partial, err)
	}
	prog.Status, prog.Completed = StatusPulling, n
	emit(prog)

	ph := newPipeHash(h, buf, hashChunks)
	defer ph.close()
	dl := &transfer{c: c, url: c.fileURL(repo, rev, f.Path), what: "download " + repo + "/" + f.Path,
		pf: pf, h: ph, n: n, size: f.Size, prog: &prog, emit: emit, lastEmit: time.Now()}
	r := retrier{c: c}
	for dl.n < f.Size {
		moved, err := dl.attempt(ctx)
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, ErrChecksum) {
			pf.Close()
			closed = true
			os.Remove(partial)
			return err
		}
		if moved {
			r.progressed()
		}
		if err := r.wait(ctx, err); err != nil {
			return err
		}
	}

	prog.Status, prog.Completed = StatusVerifying, dl.n
	emit(prog)
	ph.wait()
	got := hex.EncodeToString(h.Sum(nil))
	closed = true
	if dl.n != f.Size || (f.SHA256 != "" && got != f.SHA256) {
		pf.Close()
		os.Remove(partial)
		return fmt.Errorf("%s: got %d bytes with sha256 %s, want %d bytes with sha256 %s; removed the download: %w",
			dl.what, dl.n, got, f.Size, f.SHA256, ErrChecksum)
	}
	// The bytes reach the disk before the name does, and the name before the caller registers
	// the model: a crash never leaves a catalog row over a file that is empty or absent.
	serr := pf.Sync()
	cerr := pf.Close()
	if serr != nil {
		return fmt.Errorf("sync %s: %w", partial, diskErr(serr, 0))
	}
	if cerr != nil {
		return fmt.Errorf("close %s: %w", partial, diskErr(cerr, 0))
	}
	if err := os.Rename(partial, final); err != nil {
		return fmt.Errorf("move %s into place: %w", partial, err)
	}
	if err := c.syncDir(filepath.Dir(final)); err != nil {
		return fmt.Errorf("sync the folder of %s: %w", final, diskErr(err, 0))
	}
	prog.Status, prog.Digest = StatusDone, "sha256:"+got
	emit(prog)
	return nil
}

// hashPartial feeds an existing partial file into h and leaves the file
// positioned at its end, returning its length. A partial longer than size
// is emptied.
func hashPartial(ctx context.Context, pf partialFile, h hash.Hash, size int64, buf []byte) (int64, error) {
	st, err := pf.Stat()
	if err != nil {
		return 0, err
	}
	n := st.Size()
	if n > size {
		if err := pf.Truncate(0); err != nil {
			return 0, err
		}
		n = 0
	}
	if _, err := pf.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	if err := hashN(ctx, h, pf, n, buf); err != nil {
		return 0, err
	}
	return n, nil
}

// hashN hashes exactly n bytes of r, checking ctx between chunks.
func hashN(ctx context.Context, h hash.Hash, r io.Reader, n int64, buf []byte) error {
	for n > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		m, err := io.ReadFull(r, buf[:min(int64(len(buf)), n)])
		h.Write(buf[:m])
		n -= int64(m)
		if err != nil {
			return err
		}
	}
	return nil
}

// verifyFile reports whether the file at name hashes to want (any content
// matches an empty want).
func verifyFile(ctx context.Context, name, want string, buf []byte) (bool, error) {
	if want == "" {
		return true, nil
	}
	fh, err := os.Open(name)
	if err != nil {
		return false, fmt.Errorf("verify %s: %w", name, err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return false, fmt.Errorf("verify %s: %w", name, err)
	}
	h := sha256.New()
	if err := hashN(ctx, h, fh, st.Size(), buf); err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return false, fmt.Errorf("verify %s: %w", name, err)
	}
	return hex.EncodeToString(h.Sum(nil)) == want, nil
}

// transfer is the state of one file's download across attempts.
type transfer struct {
	c        *Client
	url      string
	what     string
	pf       partialFile
	h        *pipeHash
	n        int64 // bytes in the partial file (and, once h.wait returns, in h)
	size     int64
	prog     *Progress
	emit     func(Progress)
	lastEmit time.Time

	// A read that lands between two progress events leaves its bytes unreported until the next
	// read, which never comes when the connection then stalls; trailing reports them.
	trailMu  sync.Mutex
	trailing *time.Timer
}

// report emits the progress now, or schedules it so that the last bytes are never left unshown.
func (t *transfer) report() {
	now := time.Now()
	t.trailMu.Lock()
	defer t.trailMu.Unlock()
	if wait := progressInterval - now.Sub(t.lastEmit); wait > 0 {
		if t.trailing == nil {
			t.trailing = time.AfterFunc(wait, func() {
				t.trailMu.Lock()
				defer t.trailMu.Unlock()
				if t.trailing != nil { // not stopped by a report or the attempt's end meanwhile
					t.trailing, t.lastEmit = nil, time.Now()
					t.emit(*t.prog)
				}
			})
		}
		return
	}
	t.stopTrailing()
	t.lastEmit = now
	t.emit(*t.prog)
}

// stopTrailing drops a scheduled report (the caller holds trailMu).
func (t *transfer) stopTrailing() {
	if t.trailing != nil {
		t.trailing.Stop()
		t.trailing = nil
	}
}

// restart empties the partial file and the hash.
func (t *transfer) restart() error {
	if err := t.pf.Truncate(0); err != nil {
		return fmt.Errorf("%s: truncate partial: %w", t.what, err)
	}
	if _, err := t.pf.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("%s: rewind partial: %w", t.what, err)
	}
	t.h.wait()
	t.h.h.Reset()
	t.n = 0
	return nil
}

// attempt makes one request from the current offset and copies its body. It
// reports whether any byte was stored.
func (t *transfer) attempt(ctx context.Context) (moved bool, err error) {
	defer func() {
		t.trailMu.Lock()
		t.stopTrailing()
		t.trailMu.Unlock()
	}()
	var hdr http.Header
	if t.n > 0 {
		hdr = http.Header{"Range": {"bytes=" + strconv.FormatInt(t.n, 10) + "-"}}
	}
	a, err := t.c.do(ctx, http.MethodGet, t.url, hdr, true)
	if err != nil {
		return false, fmt.Errorf("%s: %w", t.what, err)
	}
	defer a.Close()
	switch code := a.resp.StatusCode; code {
	case http.StatusPartialContent:
		start, total, ok := parseContentRange(a.resp.Header.Get("Content-Range"))
		if !ok || start != t.n || (total >= 0 && total != t.size) {
			if err := t.restart(); err != nil {
				return false, err
			}
			return false, &retryableError{err: fmt.Errorf("%s: server sent range %q for offset %d; starting over",
				t.what, a.resp.Header.Get("Content-Range"), t.n)}
		}
	case http.StatusOK:
		if t.n > 0 { // the server ignored Range
			if err := t.restart(); err != nil {
				return false, err
			}
		}
	case http.StatusRequestedRangeNotSatisfiable:
		if _, total, ok := parseContentRange(a.resp.Header.Get("Content-Range")); ok && total == t.n {
			return false, fmt.Errorf("%s: file is %d bytes on the server, %d listed: %w", t.what, total, t.size, ErrChecksum)
		}
		if err := t.restart(); err != nil {
			return false, err
		}
		return false, &retryableError{err: fmt.Errorf("%s: server refused resuming at %d; starting over", t.what, t.n)}
	default:
		return false, statusError(t.what, a.resp)
	}

	for {
		buf := t.h.next()
		m, rerr := a.Read(buf)
		if m == 0 {
			t.h.put(buf)
		} else {
			if t.n+int64(m) > t.size {
				t.h.put(buf)
				return moved, fmt.Errorf("%s: server sent more than the %d bytes listed: %w", t.what, t.size, ErrChecksum)
			}
			if _, werr := t.pf.Write(buf[:m]); werr != nil {
				t.h.put(buf)
				return moved, fmt.Errorf("%s: %w", t.what, diskErr(werr, t.size-t.n))
			}
			t.h.add(buf[:m])
			t.n += int64(m)
			moved = true
			t.trailMu.Lock()
			t.prog.Completed = t.n
			t.trailMu.Unlock()
			t.report()
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			if ctx.Err() != nil {
				return moved, ctx.Err()
			}
			if a.stalled.Load() {
				return moved, &retryableError{err: fmt.Errorf("%s: no data for %v at byte %d: %w", t.what, t.c.stallTimeout, t.n, errStall)}
			}
			return moved, &retryableError{err: fmt.Errorf("%s: at byte %d: %w", t.what, t.n, rerr)}
		}
	}
	if t.n < t.size {
		return moved, &retryableError{err: fmt.Errorf("%s: connection closed at byte %d of %d: %w", t.what, t.n, t.size, io.ErrUnexpectedEOF)}
	}
	return moved, nil
}

// parseContentRange parses "bytes START-END/TOTAL" (TOTAL may be "*", giving
// -1) and "bytes */TOTAL" (START -1).
func parseContentRange(v string) (start, total int64, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(v), "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	total = -1
	if tot != "*" {
		t, err := strconv.ParseInt(tot, 10, 64)
		if err != nil || t < 0 {
			return 0, 0, false
		}
		total = t
	}
	if rng == "*" {
		return -1, total, true
	}
	s, _, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(s, 10, 64)
	if err != nil || start < 0 {
		return 0, 0, false
	}
	return start, total, true
}

// syncDirectory makes the entries of dir (a rename into it) durable. File systems that cannot
// sync a folder (EINVAL, ENOTSUP) are let through: there is nothing more to do on them.
func syncDirectory(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return err
	}
	return nil
}

// inside reports whether p lies within root (and is not root itself).
func inside(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != "." && filepath.IsLocal(rel)
}

// diskErr wraps a write error: ENOSPC becomes ErrDiskFull with how much
// space is still needed (need, when known).
func diskErr(err error, need int64) error {
	if !errors.Is(err, syscall.ENOSPC) {
		return err
	}
	if need > 0 {
		return fmt.Errorf("%w: %s (%d bytes) more are needed; free disk space and pull again (the download resumes): %w",
			ErrDiskFull, humanize.Bytes(uint64(need)), need, err)
	}
	return fmt.Errorf("%w: free disk space and pull again: %w", ErrDiskFull, err)
}
