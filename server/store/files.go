package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrQuota is returned by InsertFile when the file would take the store past its quota.
var ErrQuota = errors.New("file store quota exceeded")

// File is one stored file's metadata (see migrations/0008_files_batches.sql). Its content lives
// outside the database, under the name ID.
type File struct {
	ID       string // "file-" and hex digits; required and unique
	Filename string
	Purpose  string
	Bytes    int64
	// CreatedAt is stored in UTC with nanosecond precision; zero means now.
	CreatedAt time.Time
	// ExpiresAt is when the file ages out; zero for never.
	ExpiresAt time.Time
	// Owner is the id of the API key that made the file; "" when made without keys.
	Owner string
}

// Expired reports whether the file has aged out at now.
func (f File) Expired(now time.Time) bool {
	return !f.ExpiresAt.IsZero() && !now.Before(f.ExpiresAt)
}

const fileColumns = `id, filename, purpose, bytes, created_at, expires_at, owner`

// InsertFile stores f's row. With quota > 0 it fails with an error wrapping ErrQuota when the
// files' bytes would then sum to more than quota; the check and the insert are one
// transaction, so concurrent uploads cannot both slip under it.
func (s *Store) InsertFile(ctx context.Context, f File, quota int64) error {
	if f.ID == "" {
		return errors.New("save file: empty id")
	}
	if f.CreatedAt.IsZero() {
		f.CreatedAt = time.Now()
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("save file %s: %w", f.ID, err)
	}
	defer tx.Rollback()
	if quota > 0 {
		var used int64
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(sum(bytes), 0) FROM files`).Scan(&used); err != nil {
			return fmt.Errorf("save file %s: %w", f.ID, err)
		}
		if used+f.Bytes > quota {
			return fmt.Errorf("%w: %d bytes stored, %d more would pass the %d-byte limit", ErrQuota, used, f.Bytes, quota)
		}
	}
	if err := insertFile(ctx, tx, f); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("save file %s: %w", f.ID, err)
	}
	return nil
}

func insertFile(ctx context.Context, tx *sql.Tx, f File) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO files (`+fileColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		f.ID, f.Filename, f.Purpose, f.Bytes, formatTime(f.CreatedAt), optionalTime(f.ExpiresAt), f.Owner)
	if err != nil {
		return fmt.Errorf("save file %s: %w", f.ID, err)
	}
	return nil
}

// FilesBytes is the sum of the stored files' sizes.
func (s *Store) FilesBytes(ctx context.Context) (int64, error) {
	var used int64
	if err := s.r.QueryRowContext(ctx, `SELECT coalesce(sum(bytes), 0) FROM files`).Scan(&used); err != nil {
		return 0, fmt.Errorf("sum file sizes: %w", err)
	}
	return used, nil
}

// File returns the file with the given id, or an error wrapping ErrNotFound. An expired file
// is found (the caller decides; see File.Expired) until DeleteFile removes it.
func (s *Store) File(ctx context.Context, id string) (File, error) {
	row := s.r.QueryRowContext(ctx, `SELECT `+fileColumns+` FROM files WHERE id = ?`, id)
	f, err := scanFile(row)
	if errors.Is(err, sql.ErrNoRows) {
		return File{}, fmt.Errorf("file %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return File{}, fmt.Errorf("file %s: %w", id, err)
	}
	return f, nil
}

// FileQuery selects a page of files.
type FileQuery struct {
	// Purpose keeps only the files with that purpose; "" keeps all.
	Purpose string
	// After is the id of the last file of the previous page; "" starts at the beginning.
	After string
	// Limit bounds the page (at least 1).
	Limit int
	// Ascending lists the oldest first; by default the newest come first.
	Ascending bool
	// Now hides the files expired at that time; zero hides none.
	Now time.Time
	// Owners, when not nil, keeps only the files of these owners (API key ids; "" for files
	// made without keys).
	Owners []string
}

// Files lists a page of files ordered by creation time (then id), newest first unless
// q.Ascending. An After that names no file starts at the beginning.
func (s *Store) Files(ctx context.Context, q FileQuery) ([]File, error) {
	var where []string
	var args []any
	if q.Purpose != "" {
		where = append(where, "purpose = ?")
		args = append(args, q.Purpose)
	}
	if !q.Now.IsZero() {
		where = append(where, "(expires_at = '' OR expires_at > ?)")
		args = append(args, formatTime(q.Now))
	}
	if q.Owners != nil {
		clause, more := ownedBy(q.Owners)
		where, args = append(where, clause), append(args, more...)
	}
	cmp, order := "<", "DESC"
	if q.Ascending {
		cmp, order = ">", "ASC"
	}
	if q.After != "" {
		var created string
		err := s.r.QueryRowContext(ctx, `SELECT created_at FROM files WHERE id = ?`, q.After).Scan(&created)
		switch {
		case err == nil:
			where = append(where, "(created_at, id) "+cmp+" (?, ?)")
			args = append(args, created, q.After)
		case !errors.Is(err, sql.ErrNoRows):
			return nil, fmt.Errorf("list files: %w", err)
		}
	}
	query := `SELECT ` + fileColumns + ` FROM files`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY created_at " + order + ", id " + order + " LIMIT ?"
	args = append(args, max(1, q.Limit))
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list files: %w", err)
	}
	defer rows.Close()
	out := []File{}
	for rows.Next() {
		f, err := scanFile(rows)
		if err != nil {
			return nil, fmt.Errorf("list files: %w", err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list files: %w", err)
	}
	return out, nil
}

// ExpiredFiles lists the ids of up to limit files expired at now, oldest expiry first.
func (s *Store) ExpiredFiles(ctx context.Context, now time.Time, limit int) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id FROM files WHERE expires_at <> '' AND expires_at <= ?
		ORDER BY expires_at LIMIT ?`, formatTime(now), max(1, limit))
	if err != nil {
		return nil, fmt.Errorf("list expired files: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("list expired files: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list expired files: %w", err)
	}
	return ids, nil
}

// HasFile reports whether a file row with the given id exists (expired or not).
func (s *Store) HasFile(ctx context.Context, id string) (bool, error) {
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM files WHERE id = ?`, id).Scan(&n); err != nil {
		return false, fmt.Errorf("file %s: %w", id, err)
	}
	return n > 0, nil
}

// DeleteFile removes the file's row, or returns an error wrapping ErrNotFound.
func (s *Store) DeleteFile(ctx context.Context, id string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM files WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("delete file %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("delete file %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("file %s: %w", id, ErrNotFound)
	}
	return nil
}

// scanFile reads one row of fileColumns.
func scanFile(row interface{ Scan(...any) error }) (File, error) {
	var f File
	var created, expires string
	if err := row.Scan(&f.ID, &f.Filename, &f.Purpose, &f.Bytes, &created, &expires, &f.Owner); err != nil {
		return File{}, err
	}
	var err error
	if f.CreatedAt, err = parseTime(created); err != nil {
		return File{}, fmt.Errorf("created_at %q: %w", created, err)
	}
	if f.ExpiresAt, err = parseOptionalTime(expires); err != nil {
		return File{}, fmt.Errorf("expires_at %q: %w", expires, err)
	}
	return f, nil
}

// parseOptionalTime reads the schema's time text, the empty text being the zero time.
func parseOptionalTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return parseTime(s)
}
