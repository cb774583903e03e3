// Package store persists the server's records in SQLite: request records and usage, stored
// Responses API responses and conversations, the model catalog (as runtime/models'
// RecordStore) and per-model settings, files, batches and API keys.
//
// It uses modernc.org/sqlite (pure Go, no cgo). A Store holds three pools on one database
// file:
//   - the writer, exactly one connection, synchronous=FULL: everything the user stores
//     (responses, the model catalog, later files and batches) is on disk when the call returns;
//   - the records writer, exactly one connection, synchronous=NORMAL: request records only. Under
//     WAL, NORMAL skips the fsync at each commit; a power loss can lose the last commits, never
//     corrupt the file. A lost last record is acceptable; a reply that waits on an fsync is not;
//   - a read-only pool (SQLite's mode=ro) of several connections, which WAL lets read while
//     either writer writes.
//
// synchronous is a per-connection pragma, hence the second writer connection rather than a
// second file: one file keeps one schema, one migration sequence and one backup. The two writers
// queue on SQLite's write lock; every write transaction is short (a request record batch is at
// most a few hundred rows, a prune batch a few hundred deletes), and busy_timeout lets one wait
// for the other instead of failing.
//
// Every pragma is in the DSN, so every pooled connection gets it, not just the one a db.Exec
// happens to land on: journal_mode=WAL, busy_timeout=5000 and foreign_keys=ON on every pool,
// synchronous as above (FULL on the readers, where it is moot), and _txlock=immediate on both
// writers, so a write transaction takes the write lock at BEGIN (waiting up to busy_timeout)
// instead of failing with SQLITE_BUSY when it upgrades.
//
// Request records are written off the reply path: Record queues one on a bounded channel and
// never blocks; a background writer inserts what is queued in batches, one transaction each.
// When the queue is full the record is dropped, counted (DroppedRecords) and logged, so a slow
// or hung disk never stalls a reply. Flush waits for what is queued; Close drains the queue
// before closing the database. With Options.KeepRecords, records older than that are pruned in
// the background, at Open and then hourly, in small batches.
//
// The schema is built by numbered SQL files embedded from migrations/
// (0001_requests.sql, 0002_....sql, ...). Open applies the ones the database
// lacks, in order, each in its own transaction, and records each in
// schema_migrations. A feature that needs tables adds the next file; files
// already released are never edited.
//
// Conventions in the schema: times are TEXT in UTC, RFC 3339 with exactly
// nine fractional digits (see timeLayout), so text order is time order;
// durations are INTEGER microseconds; booleans are INTEGER 0 or 1.
package store

import (
	"cmp"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// ErrNotFound is returned when a looked-up record does not exist.
var ErrNotFound = errors.New("not found")

// ErrNewerDatabase is returned by Open when the database holds a schema
// version this build does not know, i.e. a newer superfluid wrote it.
var ErrNewerDatabase = errors.New("database was written by a newer superfluid")

//go:embed migrations/*.sql
var migrationFiles embed.FS

// timeLayout is RFC 3339 with a fixed nine-digit fraction. time.RFC3339Nano
// trims trailing zeros, which breaks text ordering ("05.5Z" sorts before
// "05Z"); this layout does not, and time.Parse(time.RFC3339Nano, ...) still
// reads it.
const timeLayout = "2006-01-02T15:04:05.000000000Z07:00"

// busyTimeout is how long a connection waits for another connection's lock
// (another process on the same file, or a reader during a checkpoint) before
// failing with SQLITE_BUSY.
const busyTimeout = 5 * time.Second

// Store is a handle on the superfluid database. It is safe for concurrent use.
type Store struct {
	path    string
	w       *sql.DB // the writer: one connection, synchronous=FULL
	rw      *sql.DB // the records writer: one connection, synchronous=NORMAL
	r       *sql.DB // the readers: read-only, several connections
	applied []int   // migration versions this Open applied, for tests

	rec *recorder // the background writer of request records

	// Housekeeping (pruning) runs until stop is called; Close waits for it.
	stop      context.CancelFunc
	housework sync.WaitGroup
}

// Options tunes a Store; the zero value is the default for each field.
type Options struct {
	// RecordQueue bounds the request records waiting for the background writer (default
	// 4096); past it Record drops them.
	RecordQueue int
	// RecordBatch bounds the records one transaction inserts (default 256).
	RecordBatch int
	// KeepRecords is how long request records are kept: older ones are deleted in the
	// background, at Open and then every PruneEvery. 0 keeps them forever.
	KeepRecords time.Duration
	// PruneEvery is the interval between prunes (default an hour).
	PruneEvery time.Duration
	// WrapRecordSink, when set, wraps the sink the background writer inserts request records
	// through; tests use it to slow or fail the insert. The Store itself is the sink it wraps.
	WrapRecordSink func(RequestSink) RequestSink

	// pruned, when set, is called after each prune pass (tests).
	pruned func(deleted int64, err error)
}

// Defaults of Options.
const (
	defaultRecordQueue = 4096
	defaultRecordBatch = 256
	defaultPruneEvery  = time.Hour
)

// Open opens the database at path with the default Options.
func Open(path string) (*Store, error) {
	return OpenWith(path, Options{})
}

// OpenWith opens (creating if needed) the database at path, creating its
// parent directory with mode 0700, brings its schema up to date and starts
// the background writer of request records (and pruning, when
// opts.KeepRecords is set). It fails with an error wrapping ErrNewerDatabase
// when the database was written by a newer superfluid.
func OpenWith(path string, opts Options) (*Store, error) {
	if opts.KeepRecords < 0 {
		return nil, fmt.Errorf("open database: keep records for %v: want 0 (forever) or more", opts.KeepRecords)
	}
	if path == "" {
		return nil, errors.New("open database: empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("open database %s: create directory: %w", abs, err)
	}

	w, err := openOneConn(dsn(abs, poolWriter))
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", abs, err)
	}

	ctx := context.Background()
	applied, err := migrate(ctx, w, migrationFiles)
	if err != nil {
		w.Close()
		if errors.Is(err, ErrNewerDatabase) {
			return nil, fmt.Errorf("open database: %w; install the newer superfluid, or move %s aside to start a new one", err, abs)
		}
		return nil, fmt.Errorf("open database %s: %w", abs, err)
	}

	rw, err := openOneConn(dsn(abs, poolRecords))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open database %s: records writer: %w", abs, err)
	}
	// The readers open after the writer has created the file and switched
	// it to WAL: a mode=ro connection can do neither.
	r, err := openPool(dsn(abs, poolReader))
	if err != nil {
		rw.Close()
		w.Close()
		return nil, fmt.Errorf("open database %s: read pool: %w", abs, err)
	}
	n := max(4, runtime.NumCPU())
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)

	s := &Store{path: abs, w: w, rw: rw, r: r, applied: applied}
	var sink RequestSink = s
	if opts.WrapRecordSink != nil {
		sink = opts.WrapRecordSink(s)
	}
	s.rec = newRecorder(sink, cmp.Or(opts.RecordQueue, defaultRecordQueue), cmp.Or(opts.RecordBatch, defaultRecordBatch))
	ctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	if opts.KeepRecords > 0 {
		s.housework.Add(1)
		go s.pruneLoop(ctx, opts.KeepRecords, cmp.Or(opts.PruneEvery, defaultPruneEvery), opts.pruned)
	}
	return s, nil
}

// openOneConn opens a pool of exactly one connection, kept open.
func openOneConn(dsn string) (*sql.DB, error) {
	db, err := openPool(dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	return db, nil
}

// openPool opens a pool and makes one connection, so a bad path or DSN
// fails here rather than at the first query.
func openPool(dsn string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// pool says which of the Store's pools a DSN is for.
type pool int

const (
	poolWriter  pool = iota // what the user stores: synchronous=FULL
	poolRecords             // request records: synchronous=NORMAL
	poolReader              // read-only
)

// dsn builds the modernc DSN for pool p on the database at the absolute path
// abs. The "file:" form makes SQLite read mode=ro; the path is escaped so
// that '?', '#' and '%' in it stay part of the name.
func dsn(abs string, p pool) string {
	name := filepath.ToSlash(abs)
	if !strings.HasPrefix(name, "/") {
		name = "/" + name // Windows: file:/C:/...
	}
	u := url.URL{Scheme: "file", OmitHost: true, Path: name}
	synchronous := "FULL"
	if p == poolRecords {
		synchronous = "NORMAL"
	}
	q := []string{
		"_pragma=busy_timeout(" + strconv.FormatInt(busyTimeout.Milliseconds(), 10) + ")",
		"_pragma=journal_mode(WAL)",
		"_pragma=synchronous(" + synchronous + ")",
		"_pragma=foreign_keys(ON)",
	}
	if p == poolReader {
		// No _txlock: BEGIN IMMEDIATE needs a write lock.
		q = append(q, "mode=ro")
	} else {
		q = append(q, "_txlock=immediate")
	}
	return u.String() + "?" + strings.Join(q, "&")
}

// Close stops pruning, drains the queue of request records into the
// database (a record queued after Close began is dropped and counted), and
// closes the pools. The readers close first and the writer last, so that
// the writer's connection, the last one, checkpoints the WAL into the
// database file.
func (s *Store) Close() error {
	s.stop()
	s.housework.Wait()
	s.rec.close()
	return errors.Join(s.r.Close(), s.rw.Close(), s.w.Close())
}

// migration is one numbered SQL file.
type migration struct {
	version int
	name    string
	sql     string
}

// migrationName is NNNN_words.sql.
var migrationName = regexp.MustCompile(`^([0-9]+)_[a-z0-9_]+\.sql$`)

// loadMigrations reads migrations/*.sql from fsys, sorted by version.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, path := range names {
		name := filepath.Base(path)
		m := migrationName.FindStringSubmatch(name)
		if m == nil {
			return nil, fmt.Errorf("migration %s: name is not NNNN_name.sql", name)
		}
		v, err := strconv.Atoi(m[1])
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: version must be a positive integer", name)
		}
		b, err := fs.ReadFile(fsys, path)
		if err != nil {
			return nil, fmt.Errorf("migration %s: %w", name, err)
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s have the same version", ms[i-1].name, ms[i].name)
		}
	}
	return ms, nil
}

// migrate applies the migrations in fsys that db lacks, in order, each in
// its own transaction, and returns the versions it applied. Another process
// migrating the same file at the same time is safe: each transaction is
// BEGIN IMMEDIATE (the writer's DSN) and rechecks its version inside.
func migrate(ctx context.Context, db *sql.DB, fsys fs.FS) ([]int, error) {
	ms, err := loadMigrations(fsys)
	if err != nil {
		return nil, err
	}
	known := make(map[int]bool, len(ms))
	for _, m := range ms {
		known[m.version] = true
	}

	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		applied_at TEXT NOT NULL
	)`); err != nil {
		return nil, fmt.Errorf("create schema_migrations: %w", err)
	}

	have, err := appliedVersions(ctx, db)
	if err != nil {
		return nil, err
	}
	for _, v := range have {
		if !known[v] {
			latest := 0
			if len(ms) > 0 {
				latest = ms[len(ms)-1].version
			}
			return nil, fmt.Errorf("%w (it has schema version %d; this build knows up to %d)", ErrNewerDatabase, v, latest)
		}
	}

	var applied []int
	for _, m := range ms {
		if slices.Contains(have, m.version) {
			continue
		}
		ok, err := applyMigration(ctx, db, m)
		if err != nil {
			return applied, fmt.Errorf("migration %s: %w", m.name, err)
		}
		if ok {
			applied = append(applied, m.version)
		}
	}
	return applied, nil
}

// appliedVersions lists the versions recorded in schema_migrations.
func appliedVersions(ctx context.Context, db *sql.DB) ([]int, error) {
	rows, err := db.QueryContext(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	defer rows.Close()
	var vs []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("read schema_migrations: %w", err)
		}
		vs = append(vs, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	return vs, nil
}

// applyMigration runs m in one transaction and reports whether it ran; it
// does not when another connection recorded m first.
func applyMigration(ctx context.Context, db *sql.DB, m migration) (ran bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, m.version).Scan(&n); err != nil {
		return false, err
	}
	if n > 0 {
		return false, tx.Rollback()
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
		m.version, formatTime(time.Now())); err != nil {
		return false, err
	}
	if err := tx.Commit(); err != nil {
		return false, err
	}
	return true, nil
}

// formatTime renders t as the schema's time text.
func formatTime(t time.Time) string {
	return t.UTC().Format(timeLayout)
}

// parseTime reads the schema's time text.
func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}

// boolInt is the schema's boolean: 0 or 1.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
