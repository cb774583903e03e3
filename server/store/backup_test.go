package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// seedBackupRows gives s a person with a key (a foreign key), audit entries (AUTOINCREMENT) and
// request records under the given tag.
func seedBackupRows(t *testing.T, s *Store, tag string, audits int) {
	t.Helper()
	ctx := context.Background()
	person := Person{ID: "p-" + tag, Name: "person-" + tag, PasswordHash: "x", Role: "member", State: "active"}
	if err := s.InsertPerson(ctx, person); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertKey(ctx, Key{ID: "key-" + tag, Name: "key-" + tag, Prefix: "sk-", Hash: sha256.Sum256([]byte(tag)), PersonID: person.ID}); err != nil {
		t.Fatal(err)
	}
	for i := range audits {
		if _, err := s.AppendAudit(ctx, AuditEntry{Action: "test." + tag, Target: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RecordRequest(ctx, RequestRecord{ID: "req-" + tag, Model: "m", Status: 200, PersonID: person.ID}); err != nil {
		t.Fatal(err)
	}
}

// backupFile writes a backup of s into a file and returns its path.
func backupFile(t *testing.T, s *Store) string {
	t.Helper()
	var buf bytes.Buffer
	if err := s.Backup(context.Background(), &buf); err != nil {
		t.Fatalf("Backup: %v", err)
	}
	path := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// liveSnapshot is what the refusal tests compare before and after: the people, keys, audit
// entries and request ids.
func liveSnapshot(t *testing.T, s *Store) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	for _, q := range []string{
		`SELECT id || ':' || name FROM people ORDER BY id`,
		`SELECT id || ':' || coalesce(person_id, '') FROM api_keys ORDER BY id`,
		`SELECT id || ':' || action || ':' || target FROM audit_log ORDER BY id`,
		`SELECT id FROM requests ORDER BY id`,
	} {
		rows, err := s.r.QueryContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			b.WriteString(v + "\n")
		}
		rows.Close()
		b.WriteString("--\n")
	}
	return b.String()
}

func TestRestoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	seedBackupRows(t, s, "old", 3)
	path := backupFile(t, s)
	want := liveSnapshot(t, s)

	seedBackupRows(t, s, "new", 2) // written after the backup: the restore takes them away
	if liveSnapshot(t, s) == want {
		t.Fatal("the rows written after the backup did not change the snapshot")
	}
	got, err := s.Restore(ctx, path)
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if got.Tables < 10 || got.Rows < 6 {
		t.Errorf("Restore = %+v, want every table (>= 10) and the seeded rows (>= 6)", got)
	}
	if now := liveSnapshot(t, s); now != want {
		t.Errorf("after restore:\n%s\nwant:\n%s", now, want)
	}
	// The AUTOINCREMENT counter came back with the rows: the next id follows the backup's.
	e, err := s.AppendAudit(ctx, AuditEntry{Action: "after"})
	if err != nil {
		t.Fatal(err)
	}
	if e.ID != 4 {
		t.Errorf("audit id after restore = %d, want 4 (the backup held 1..3)", e.ID)
	}
}

func TestBackupWhileWriting(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	seedBackupRows(t, s, "base", 1)
	var wrote atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // a writer that never pauses while the backups run
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.AppendAudit(ctx, AuditEntry{Action: "busy", Target: fmt.Sprint(i)}); err != nil {
				t.Error(err)
				return
			}
			if err := s.RecordRequest(ctx, RequestRecord{ID: fmt.Sprintf("busy-%d", i), Status: 200}); err != nil {
				t.Error(err)
				return
			}
			wrote.Add(1)
		}
	}()
	var paths []string
	for wrote.Load() == 0 {
	}
	for len(paths) < 3 {
		start := wrote.Load()
		paths = append(paths, backupFile(t, s))
		for wrote.Load() == start { // each backup overlaps fresh writes
		}
	}
	close(stop)
	wg.Wait()

	for _, path := range paths {
		b, err := Open(path)
		if err != nil {
			t.Fatalf("open backup: %v", err)
		}
		var verdict string
		var audits, maxID int64
		if err := b.r.QueryRow(`PRAGMA integrity_check`).Scan(&verdict); err != nil || verdict != "ok" {
			t.Errorf("integrity_check = %q, %v", verdict, err)
		}
		// One snapshot: the audit ids have no hole (AUTOINCREMENT from 1).
		if err := b.r.QueryRow(`SELECT count(*), coalesce(max(id), 0) FROM audit_log`).Scan(&audits, &maxID); err != nil {
			t.Fatal(err)
		}
		if audits != maxID || audits < 2 {
			t.Errorf("backup holds %d audit entries with ids up to %d, want a consistent run from 1", audits, maxID)
		}
		b.Close()
	}
	if wrote.Load() < 3 {
		t.Errorf("only %d writes ran beside the backups", wrote.Load())
	}
	if _, err := s.Restore(ctx, paths[len(paths)-1]); err != nil {
		t.Errorf("restore the last backup: %v", err)
	}
}

func TestRestoreRefusesBadFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()

	random := filepath.Join(dir, "random.db")
	noise := make([]byte, 64<<10)
	rand.Read(noise)
	writeFile(t, random, noise)

	// A real backup cut in half: big enough that the half lacks pages the header promises.
	big := openTest(t)
	seedBackupRows(t, big, "big", 2000)
	whole, err := os.ReadFile(backupFile(t, big))
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.db")
	writeFile(t, truncated, whole[:len(whole)/2])

	// A real backup with pages in its middle overwritten: it opens, the check finds the damage.
	damaged := filepath.Join(dir, "damaged.db")
	hurt := bytes.Clone(whole)
	for at := len(hurt) / 4; at < len(hurt)*3/4; at += len(noise) {
		copy(hurt[at:len(hurt)*3/4], noise)
	}
	writeFile(t, damaged, hurt)

	foreign := filepath.Join(dir, "foreign.db")
	sqliteFile(t, foreign, `CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)`, `INSERT INTO notes (text) VALUES ('hi')`)

	// superfluid's schema, stamped with a version this build does not know.
	newer := backupFile(t, big)
	sqliteFile(t, newer, `INSERT INTO schema_migrations (version, applied_at) VALUES (9999, '2030-01-01T00:00:00Z')`)

	// superfluid's migrations table but a live table missing.
	gutted := backupFile(t, big)
	sqliteFile(t, gutted, `DROP TABLE shared_prefixes`)

	for _, tc := range []struct {
		name, path, reason string
	}{
		{"random bytes", random, "not a readable SQLite database"},
		{"truncated backup", truncated, ""},
		{"damaged page", damaged, ""},
		{"foreign SQLite", foreign, "not a superfluid database"},
		{"newer schema", newer, "newer superfluid"},
		{"a table missing", gutted, "shared_prefixes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t)
			seedBackupRows(t, s, "live", 3)
			before := liveSnapshot(t, s)
			_, err := s.Restore(ctx, tc.path)
			if !errors.Is(err, ErrInvalidBackup) {
				t.Fatalf("Restore = %v, want ErrInvalidBackup", err)
			}
			t.Log(err)
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("Restore = %v, want the reason %q", err, tc.reason)
			}
			if after := liveSnapshot(t, s); after != before {
				t.Errorf("live rows changed by a refused restore:\n%s\nwas:\n%s", after, before)
			}
		})
	}
}

func TestRestoreOlderBackupIsMigrated(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	seedBackupRows(t, s, "x", 1)
	path := backupFile(t, s)
	// As an older build would have written it: without the last migration's table and row.
	sqliteFile(t, path, `DROP TABLE shared_prefixes`, `DELETE FROM schema_migrations WHERE version = 17`)
	want := liveSnapshot(t, s)
	if _, err := s.Restore(ctx, path); err != nil {
		t.Fatalf("Restore of an older backup: %v", err)
	}
	if got := liveSnapshot(t, s); got != want {
		t.Errorf("after restore:\n%s\nwant:\n%s", got, want)
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// sqliteFile runs statements on the SQLite file at path (creating it).
func sqliteFile(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// TestRestoreFromADatabaseFile: a closed database file itself (WAL mode in its header, not a
// VACUUM INTO copy) is a backup too.
func TestRestoreFromADatabaseFile(t *testing.T) {
	dir := t.TempDir()
	src, err := Open(filepath.Join(dir, "src.db"))
	if err != nil {
		t.Fatal(err)
	}
	seedBackupRows(t, src, "src", 3)
	want := liveSnapshot(t, src)
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	s := openTest(t)
	seedBackupRows(t, s, "live", 1)
	if _, err := s.Restore(context.Background(), filepath.Join(dir, "src.db")); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if got := liveSnapshot(t, s); got != want {
		t.Errorf("after restore:\n%s\nwant:\n%s", got, want)
	}
}
