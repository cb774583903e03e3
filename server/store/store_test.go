package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
)

// openTest opens a store in a fresh temporary directory and closes it when
// the test ends.
func openTest(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "superfluid.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// knownVersions lists the versions of the embedded migrations.
func knownVersions(t *testing.T) []int {
	t.Helper()
	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		t.Fatalf("loadMigrations: %v", err)
	}
	if len(ms) == 0 {
		t.Fatal("no embedded migrations")
	}
	var vs []int
	for _, m := range ms {
		vs = append(vs, m.version)
	}
	return vs
}

// schemaRows returns schema_migrations as version → applied_at.
func schemaRows(t *testing.T, db *sql.DB) map[int]string {
	t.Helper()
	rows, err := db.Query(`SELECT version, applied_at FROM schema_migrations`)
	if err != nil {
		t.Fatalf("query schema_migrations: %v", err)
	}
	defer rows.Close()
	m := map[int]string{}
	for rows.Next() {
		var v int
		var at string
		if err := rows.Scan(&v, &at); err != nil {
			t.Fatal(err)
		}
		if _, err := parseTime(at); err != nil {
			t.Errorf("version %d: applied_at %q is not RFC 3339: %v", v, at, err)
		}
		m[v] = at
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestOpenTwice(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "nested", "dir", "superfluid.db")
	want := knownVersions(t)

	s, err := Open(path)
	if err != nil {
		t.Fatalf("first Open: %v", err)
	}
	if !slices.Equal(s.applied, want) {
		t.Errorf("first Open applied %v, want %v", s.applied, want)
	}
	first := schemaRows(t, s.w)
	if len(first) != len(want) {
		t.Errorf("schema_migrations has %d rows, want %d", len(first), len(want))
	}
	if err := s.RecordRequest(ctx, RequestRecord{ID: "chatcmpl-keep", Model: "m", Status: 200}); err != nil {
		t.Fatalf("RecordRequest: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	info, err := os.Stat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o700 {
		t.Errorf("created directory has mode %o, want 700", perm)
	}

	s, err = Open(path)
	if err != nil {
		t.Fatalf("second Open: %v", err)
	}
	defer s.Close()
	if len(s.applied) != 0 {
		t.Errorf("second Open applied %v, want nothing", s.applied)
	}
	if second := schemaRows(t, s.w); !mapsEqual(first, second) {
		t.Errorf("schema_migrations changed on reopen: %v, then %v", first, second)
	}
	got, err := s.Request(ctx, "chatcmpl-keep")
	if err != nil {
		t.Fatalf("Request after reopen: %v", err)
	}
	if got.Model != "m" || got.Status != 200 {
		t.Errorf("record after reopen = %+v", got)
	}
}

func mapsEqual(a, b map[int]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestPragmasOnEveryConnection(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)

	if got := s.w.Stats().MaxOpenConnections; got != 1 {
		t.Errorf("writer MaxOpenConnections = %d, want 1", got)
	}
	if got := s.rw.Stats().MaxOpenConnections; got != 1 {
		t.Errorf("records writer MaxOpenConnections = %d, want 1", got)
	}
	if got := s.r.Stats().MaxOpenConnections; got < 3 {
		t.Errorf("reader MaxOpenConnections = %d, want at least 3", got)
	}

	pools := []struct {
		name        string
		db          *sql.DB
		conns       int
		readOnly    bool
		synchronous int
	}{
		{"writer", s.w, 1, false, 2},          // FULL: what the user stores
		{"records writer", s.rw, 1, false, 1}, // NORMAL: request records
		{"reader", s.r, 3, true, 2},
	}
	for _, p := range pools {
		t.Run(p.name, func(t *testing.T) {
			// Hold the connections at once so each is a distinct one.
			var conns []*sql.Conn
			for range p.conns {
				c, err := p.db.Conn(ctx)
				if err != nil {
					t.Fatalf("Conn: %v", err)
				}
				defer c.Close()
				conns = append(conns, c)
			}
			if got := p.db.Stats().OpenConnections; got != p.conns {
				t.Errorf("open connections = %d, want %d", got, p.conns)
			}
			for i, c := range conns {
				var journal string
				var synchronous, busy, fk int
				if err := c.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&journal); err != nil {
					t.Fatalf("conn %d: journal_mode: %v", i, err)
				}
				if err := c.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&synchronous); err != nil {
					t.Fatalf("conn %d: synchronous: %v", i, err)
				}
				if err := c.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&busy); err != nil {
					t.Fatalf("conn %d: busy_timeout: %v", i, err)
				}
				if err := c.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk); err != nil {
					t.Fatalf("conn %d: foreign_keys: %v", i, err)
				}
				if journal != "wal" {
					t.Errorf("conn %d: journal_mode = %q, want wal", i, journal)
				}
				if synchronous != p.synchronous {
					t.Errorf("conn %d: synchronous = %d, want %d", i, synchronous, p.synchronous)
				}
				if busy != 5000 {
					t.Errorf("conn %d: busy_timeout = %d, want 5000", i, busy)
				}
				if fk != 1 {
					t.Errorf("conn %d: foreign_keys = %d, want 1", i, fk)
				}
				_, err := c.ExecContext(ctx, `INSERT INTO requests (id, model, endpoint, stream, status, created_at)
					VALUES (?, '', '', 0, 0, '')`, p.name)
				if p.readOnly && err == nil {
					t.Errorf("conn %d: write through the read pool succeeded", i)
				}
				if !p.readOnly && err != nil {
					t.Errorf("conn %d: write through the writer failed: %v", i, err)
				}
			}
		})
	}
}

// TestWriterBeginsImmediate checks _txlock=immediate: a transaction on
// either writer holds the write lock from BEGIN, before any statement, so
// another connection cannot start writing.
func TestWriterBeginsImmediate(t *testing.T) {
	s := openTest(t)
	for _, w := range []*sql.DB{s.w, s.rw} {
		beginsImmediate(t, s, w)
	}
}

func beginsImmediate(t *testing.T, s *Store, w *sql.DB) {
	t.Helper()
	ctx := context.Background()
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatalf("BeginTx: %v", err)
	}
	defer tx.Rollback()

	other, err := sql.Open("sqlite", s.path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	c, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, `BEGIN IMMEDIATE`); err == nil {
		c.ExecContext(ctx, `ROLLBACK`)
		t.Fatal("a second writer began while the store's transaction was open; the writer's BEGIN is not IMMEDIATE")
	}
}

func TestOpenNewerDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "superfluid.db")
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if _, err := s.w.Exec(`INSERT INTO schema_migrations (version, applied_at) VALUES (999, ?)`,
		"2030-01-01T00:00:00.000000000Z"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(path)
	if err == nil {
		s.Close()
		t.Fatal("Open of a database with schema version 999 succeeded")
	}
	if !errors.Is(err, ErrNewerDatabase) {
		t.Errorf("error %v does not wrap ErrNewerDatabase", err)
	}
	for _, want := range []string{"database was written by a newer superfluid", "999", path} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestOpenFails(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	locked := filepath.Join(dir, "locked")
	if err := os.Mkdir(locked, 0o500); err != nil {
		t.Fatal(err)
	}
	notDB := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(notDB, []byte(strings.Repeat("this is not an sqlite database ", 200)), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		path     string
		wantIs   error // nil: any error
		needUser bool  // root ignores permission bits
	}{
		{"parent is a file", filepath.Join(file, "superfluid.db"), syscall.ENOTDIR, false},
		{"path is a directory", dir, nil, false},
		{"parent not writable", filepath.Join(locked, "sub", "superfluid.db"), os.ErrPermission, true},
		// The same path (the directory cannot be created) for root, whom permission bits do
		// not stop: a directory to create under a regular file.
		{"directory under a file", filepath.Join(file, "sub", "dir", "superfluid.db"), syscall.ENOTDIR, false},
		{"not a database", notDB, nil, false},
		{"empty path", "", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needUser && os.Geteuid() == 0 {
				t.Skip("running as root: permission bits do not apply")
			}
			s, err := Open(tt.path)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%q) succeeded", tt.path)
			}
			if !strings.HasPrefix(err.Error(), "open database") {
				t.Errorf("error %q lacks the %q context", err, "open database")
			}
			if tt.wantIs == syscall.ENOTDIR || tt.wantIs == os.ErrPermission {
				if !strings.Contains(err.Error(), "create directory") {
					t.Errorf("error %q does not say the directory could not be created", err)
				}
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v does not wrap %v", err, tt.wantIs)
			}
			if tt.path != "" && !strings.Contains(err.Error(), tt.path) {
				t.Errorf("error %q does not name the path", err)
			}
		})
	}
}

func TestOpenPathWithURICharacters(t *testing.T) {
	// The DSN is a file: URI; these characters must stay in the file name.
	path := filepath.Join(t.TempDir(), "a dir?x=1#frag", "100% db?.sqlite")
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	if err := s.RecordRequest(context.Background(), RequestRecord{ID: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Request(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("database not at the given path: %v", err)
	}
}

func TestMigrate(t *testing.T) {
	const create1 = "CREATE TABLE a (x INTEGER);\nCREATE TABLE a2 (y TEXT);"
	tests := []struct {
		name        string
		files       map[string]string
		wantErr     string // substring; "" means success
		wantApplied []int
		wantTables  []string // must exist afterwards
		wantAbsent  []string // must not exist afterwards
	}{
		{
			name:        "two in order, multi-statement",
			files:       map[string]string{"0002_b.sql": "CREATE TABLE b (z INTEGER);", "0001_a.sql": create1},
			wantApplied: []int{1, 2},
			wantTables:  []string{"a", "a2", "b"},
		},
		{
			name:        "versions sort numerically",
			files:       map[string]string{"10_ten.sql": "CREATE TABLE ten (x);", "9_nine.sql": "CREATE TABLE nine (x);"},
			wantApplied: []int{9, 10},
			wantTables:  []string{"nine", "ten"},
		},
		{
			name:    "bad name",
			files:   map[string]string{"init.sql": create1},
			wantErr: "not NNNN_name.sql",
		},
		{
			name:    "zero version",
			files:   map[string]string{"0000_zero.sql": create1},
			wantErr: "positive integer",
		},
		{
			name:    "duplicate version",
			files:   map[string]string{"0001_a.sql": create1, "001_b.sql": "CREATE TABLE b (z);"},
			wantErr: "same version",
		},
		{
			name: "failing migration rolls back alone",
			files: map[string]string{
				"0001_a.sql":   create1,
				"0002_bad.sql": "CREATE TABLE b (z INTEGER);\nINSERT INTO nowhere VALUES (1);",
			},
			wantErr:     "0002_bad.sql",
			wantApplied: []int{1},
			wantTables:  []string{"a", "a2"},
			wantAbsent:  []string{"b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			db := openWriter(t)
			fsys := fstest.MapFS{}
			for name, body := range tt.files {
				fsys["migrations/"+name] = &fstest.MapFile{Data: []byte(body)}
			}
			applied, err := migrate(ctx, db, fsys)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("migrate: %v", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("migrate succeeded, want error containing %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("migrate error %q, want it to contain %q", err, tt.wantErr)
			}
			if !slices.Equal(applied, tt.wantApplied) {
				t.Errorf("applied %v, want %v", applied, tt.wantApplied)
			}
			if tt.wantApplied != nil {
				var recorded []int
				for v := range schemaRows(t, db) {
					recorded = append(recorded, v)
				}
				slices.Sort(recorded)
				if !slices.Equal(recorded, tt.wantApplied) {
					t.Errorf("schema_migrations holds %v, want %v", recorded, tt.wantApplied)
				}
			}
			for _, name := range tt.wantTables {
				if !tableExists(t, db, name) {
					t.Errorf("table %s missing", name)
				}
			}
			for _, name := range tt.wantAbsent {
				if tableExists(t, db, name) {
					t.Errorf("table %s exists; its migration should have rolled back", name)
				}
			}
		})
	}
}

func TestMigrateAppliesOnlyNew(t *testing.T) {
	ctx := context.Background()
	db := openWriter(t)
	v1 := fstest.MapFS{"migrations/0001_a.sql": {Data: []byte("CREATE TABLE a (x);")}}
	v2 := fstest.MapFS{
		"migrations/0001_a.sql": {Data: []byte("CREATE TABLE a (x);")},
		"migrations/0002_b.sql": {Data: []byte("CREATE TABLE b (x);")},
	}
	steps := []struct {
		fsys    fstest.MapFS
		want    []int
		wantErr error
	}{
		{v1, []int{1}, nil},
		{v1, nil, nil},
		{v2, []int{2}, nil},
		{v2, nil, nil},
		{v1, nil, ErrNewerDatabase}, // an older build meets version 2
	}
	for i, st := range steps {
		applied, err := migrate(ctx, db, st.fsys)
		if !errors.Is(err, st.wantErr) {
			t.Fatalf("step %d: error %v, want %v", i, err, st.wantErr)
		}
		if !slices.Equal(applied, st.want) {
			t.Errorf("step %d: applied %v, want %v", i, applied, st.want)
		}
	}
}

// openWriter opens a bare writer pool, without migrations, on a fresh file.
func openWriter(t *testing.T) *sql.DB {
	t.Helper()
	db, err := openPool(dsn(filepath.Join(t.TempDir(), "m.db"), poolWriter))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func tableExists(t *testing.T, db *sql.DB, name string) bool {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}
