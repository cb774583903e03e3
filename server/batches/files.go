package batches

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/store"
)

// Files: uploads kept under FilesConfig.Dir, their metadata in the store. A file's content is
// written to a temporary file in the same folder, synced and renamed to its id before its row
// is inserted, so a row always has its content; what a crash leaves behind (a temporary file,
// or content whose row was never inserted) is swept when the service starts (StartBackground).

// FilesConfig says where and how much the file store keeps.
type FilesConfig struct {
	// Dir holds the files' content (<data>/files); "" keeps no files (uploads are refused).
	Dir string
	// MaxBytes caps the stored files' total size (--files-max-bytes); 0 is no cap.
	MaxBytes int64
	// Expiry is how long a file is kept (--files-expiry); 0 keeps files until deleted. A
	// client's shorter expires_after wins.
	Expiry time.Duration
}

// File is one stored file.
type File struct {
	ID        string // "file-" and 24 hex digits
	Filename  string
	Purpose   string
	Bytes     int64
	CreatedAt time.Time
	// ExpiresAt is when the file ages out; zero for never.
	ExpiresAt time.Time
}

// NewFile is an upload.
type NewFile struct {
	Filename, Purpose string
	// ExpiresAfter is how long the client wants the file kept; 0 for the server's default.
	ExpiresAfter time.Duration
	// Content is read to its end (streamed to disk, never held whole in memory).
	Content io.Reader
}

// FileQuery selects a page of files (GET /v1/files).
type FileQuery struct {
	Purpose   string
	After     string // the last id of the previous page
	Limit     int
	Ascending bool
}

var (
	// ErrFileNotFound is a file id that names no stored file: unknown, expired, deleted, or
	// not a file id at all.
	ErrFileNotFound = errors.New("no such file")
	// ErrFilesQuota is an upload that would take the file store past --files-max-bytes.
	ErrFilesQuota = errors.New("the file store is full")
	// ErrNoFiles is a service that keeps no files (no FilesConfig.Dir).
	ErrNoFiles = errors.New("this server keeps no files")
)

// FileNotFoundError names the id that was not found; it wraps ErrFileNotFound.
type FileNotFoundError struct{ ID string }

func (e *FileNotFoundError) Error() string { return "no such file: " + e.ID }

// Unwrap lets errors.Is(err, ErrFileNotFound) match.
func (e *FileNotFoundError) Unwrap() error { return ErrFileNotFound }

// fileID is the shape of the ids this server hands out. Any other id is not found without
// touching the disk, so an id can never name a path (no "/", "..", or anything but hex).
var fileID = regexp.MustCompile(`^file-[0-9a-f]{24}$`)

// Names of the temporary files in the files folder; the sweep removes them.
const (
	uploadPrefix = ".upload-"
	outputPrefix = ".batch-"
)

func newFileID() string { return "file-" + randomHex(12) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func toFile(f store.File) File {
	return File{ID: f.ID, Filename: f.Filename, Purpose: f.Purpose, Bytes: f.Bytes, CreatedAt: f.CreatedAt, ExpiresAt: f.ExpiresAt}
}

func (s *Service) filesReady() error {
	if s.store == nil || s.cfg.Files.Dir == "" {
		return ErrNoFiles
	}
	return nil
}

// expiry is when a file created at created expires: the client's wish or the server's
// expiry, the shorter; zero for never.
func (s *Service) expiry(created time.Time, wish time.Duration) time.Time {
	d := s.cfg.Files.Expiry
	if wish > 0 && (d <= 0 || wish < d) {
		d = wish
	}
	if d <= 0 {
		return time.Time{}
	}
	return created.Add(d)
}

// Upload is an upload's content on disk (a synced temporary file), not yet a file: Commit
// makes it one, Discard drops it. The dialect receives the content before it knows the rest
// of the request (a multipart body may send the file before its purpose).
type Upload struct {
	s    *Service
	path string // the temporary file; "" once committed or discarded
	n    int64
	// reserved is the quota the upload holds (its n bytes) until its row counts them.
	reserved int64
}

// ErrUploadCut is an upload whose content could not be read to its end (the client was cut
// off halfway); nothing of it is kept.
var ErrUploadCut = errors.New("the upload was cut off")

// Receive streams r to a temporary file in the files folder, up to what the quota leaves:
// more is ErrFilesQuota, a read error is ErrUploadCut. Either way nothing is left behind.
func (s *Service) Receive(ctx context.Context, r io.Reader) (*Upload, error) {
	if err := s.filesReady(); err != nil {
		return nil, err
	}
	dir := s.cfg.Files.Dir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create the files folder: %w", err)
	}
	var q *quotaWriter
	if s.cfg.Files.MaxBytes > 0 {
		q = &quotaWriter{s: s, ctx: context.WithoutCancel(ctx)}
	}
	n, path, err := writeTemp(dir, uploadPrefix, r, q)
	if q != nil {
		// Keep exactly the upload's bytes; on failure nothing (its file is gone already).
		keep := n
		if err != nil {
			keep = 0
		}
		s.unreserve(q.granted - keep)
	}
	if errors.Is(err, ErrFilesQuota) {
		return nil, s.quotaError(n)
	}
	if err != nil {
		return nil, err
	}
	u := &Upload{s: s, path: path, n: n}
	if q != nil {
		u.reserved = n
	}
	return u, nil
}

// Discard removes an upload that was not committed; after Commit it does nothing.
func (u *Upload) Discard() {
	if u.path != "" {
		os.Remove(u.path)
		u.path = ""
		u.release()
	}
}

// release gives the upload's reserved quota back: its file is gone, or its row counts it now.
func (u *Upload) release() {
	u.s.unreserve(u.reserved)
	u.reserved = 0
}

// Commit makes the upload a file: renamed to its id, then its row inserted (the quota checked
// again in that transaction). On failure nothing is kept.
func (u *Upload) Commit(ctx context.Context, nf NewFile) (File, error) {
	if u.path == "" {
		return File{}, errors.New("the upload was committed or discarded already")
	}
	s := u.s
	f := store.File{ID: newFileID(), Filename: nf.Filename, Purpose: nf.Purpose, Bytes: u.n, CreatedAt: time.Now(), Owner: core.OwnerOf(ctx)}
	f.ExpiresAt = s.expiry(f.CreatedAt, nf.ExpiresAfter)
	dir := s.cfg.Files.Dir
	path := filepath.Join(dir, f.ID)
	if err := os.Rename(u.path, path); err != nil {
		u.Discard()
		return File{}, fmt.Errorf("store the upload: %w", err)
	}
	u.path = ""
	syncDir(dir)
	// The reservation goes only after the insert: in between, the bytes count twice (safe),
	// never zero times.
	defer u.release()
	if err := s.store.InsertFile(context.WithoutCancel(ctx), f, s.cfg.Files.MaxBytes); err != nil {
		os.Remove(path)
		if errors.Is(err, store.ErrQuota) {
			return File{}, s.quotaError(u.n)
		}
		return File{}, err
	}
	return toFile(f), nil
}

// CreateFile stores an upload in one call: Receive, then Commit.
func (s *Service) CreateFile(ctx context.Context, nf NewFile) (File, error) {
	u, err := s.Receive(ctx, nf.Content)
	if err != nil {
		return File{}, err
	}
	defer u.Discard()
	return u.Commit(ctx, nf)
}

// writeTemp copies r into a new temporary file in dir and syncs it, returning its size and
// path. With q, every byte is reserved before it is written (more than the quota leaves is
// ErrFilesQuota). On any error the temporary file is removed.
func writeTemp(dir, prefix string, r io.Reader, q *quotaWriter) (n int64, path string, err error) {
	tmp, err := os.CreateTemp(dir, prefix+"*")
	if err != nil {
		return 0, "", fmt.Errorf("store the upload: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	src := &readErr{r: r}
	var to io.Writer = tmp
	if q != nil {
		q.w, to = tmp, q
	}
	// CopyBuffer with a writer that is not a ReaderFrom: every byte goes through q.Write.
	if n, err = io.CopyBuffer(struct{ io.Writer }{to}, src, make([]byte, 32<<10)); err != nil {
		if errors.Is(err, ErrFilesQuota) {
			return n + 1, "", ErrFilesQuota // n bytes fitted; one more did not
		}
		if src.err != nil {
			return n, "", fmt.Errorf("%w: %v", ErrUploadCut, err)
		}
		return n, "", fmt.Errorf("store the upload: %w", err)
	}
	if err = tmp.Sync(); err != nil {
		return n, "", fmt.Errorf("store the upload: %w", err)
	}
	if err = tmp.Close(); err != nil {
		return n, "", fmt.Errorf("store the upload: %w", err)
	}
	return n, tmp.Name(), nil
}

// readErr remembers the error its reader returned (other than io.EOF), to tell a client cut
// off from a disk that failed.
type readErr struct {
	r   io.Reader
	err error
}

func (r *readErr) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		r.err = err
	}
	return n, err
}

// syncDir makes a rename in dir durable (best effort: not every platform can sync a folder).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// File returns a stored file, or a *FileNotFoundError.
func (s *Service) File(ctx context.Context, id string) (File, error) {
	f, err := s.file(ctx, id)
	if err != nil {
		return File{}, err
	}
	return toFile(f), nil
}

func (s *Service) file(ctx context.Context, id string) (store.File, error) {
	if s.filesReady() != nil || !fileID.MatchString(id) {
		return store.File{}, &FileNotFoundError{ID: id}
	}
	f, err := s.store.File(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (f.Expired(time.Now()) || !core.Visible(ctx, f.Owner))) {
		return store.File{}, &FileNotFoundError{ID: id}
	}
	return f, err
}

// Files lists a page of files, newest first unless q.Ascending, and reports whether more
// follow.
func (s *Service) Files(ctx context.Context, q FileQuery) ([]File, bool, error) {
	if s.filesReady() != nil {
		return []File{}, false, nil
	}
	limit := max(1, q.Limit)
	fs, err := s.store.Files(ctx, store.FileQuery{Purpose: q.Purpose, After: q.After, Limit: limit + 1, Ascending: q.Ascending, Now: time.Now(),
		Owners: core.VisibleOwners(ctx)})
	if err != nil {
		return nil, false, err
	}
	more := len(fs) > limit
	out := make([]File, 0, min(len(fs), limit))
	for _, f := range fs[:min(len(fs), limit)] {
		out = append(out, toFile(f))
	}
	return out, more, nil
}

// OpenFile opens a stored file's content for reading; the caller closes it.
func (s *Service) OpenFile(ctx context.Context, id string) (File, *os.File, error) {
	f, err := s.file(ctx, id)
	if err != nil {
		return File{}, nil, err
	}
	r, err := os.Open(filepath.Join(s.cfg.Files.Dir, f.ID))
	if errors.Is(err, os.ErrNotExist) {
		// The row outlived its content (deleted by hand): the file is gone.
		return File{}, nil, &FileNotFoundError{ID: id}
	}
	if err != nil {
		return File{}, nil, fmt.Errorf("open file %s: %w", id, err)
	}
	return toFile(f), r, nil
}

// DeleteFile removes a file: its row, then its content.
func (s *Service) DeleteFile(ctx context.Context, id string) error {
	if _, err := s.file(ctx, id); err != nil {
		return err
	}
	return s.removeFile(ctx, id)
}

func (s *Service) removeFile(ctx context.Context, id string) error {
	if err := s.store.DeleteFile(ctx, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return &FileNotFoundError{ID: id}
		}
		return err
	}
	if err := os.Remove(filepath.Join(s.cfg.Files.Dir, id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		slog.Warn("a deleted file's content could not be removed; the next start removes it", "file", id, "err", err)
	}
	return nil
}

// sweepFiles removes what a crash left in the files folder: temporary files, and content
// whose row was never inserted (or was deleted before the content). It runs before anything
// writes there.
func (s *Service) sweepFiles(ctx context.Context) error {
	entries, err := os.ReadDir(s.cfg.Files.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sweep the files folder: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		stray := strings.HasPrefix(name, uploadPrefix) || strings.HasPrefix(name, outputPrefix)
		if !stray && fileID.MatchString(name) {
			has, err := s.store.HasFile(ctx, name)
			if err != nil {
				return err
			}
			stray = !has
		}
		if stray {
			if err := os.Remove(filepath.Join(s.cfg.Files.Dir, name)); err != nil {
				slog.Warn("a stray file could not be removed", "file", name, "err", err)
			}
		}
	}
	return nil
}

// expireFiles deletes the files expired by now.
func (s *Service) expireFiles(ctx context.Context, now time.Time) error {
	for {
		ids, err := s.store.ExpiredFiles(ctx, now, 100)
		if err != nil || len(ids) == 0 {
			return err
		}
		for _, id := range ids {
			if err := s.removeFile(ctx, id); err != nil && !errors.Is(err, ErrFileNotFound) {
				return err
			}
		}
	}
}
