package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrInvalidBackup is wrapped by Restore's refusals of the file itself: not an SQLite database,
// a damaged one, one that is not superfluid's, or one written by a newer superfluid. The live
// database is untouched when Restore returns it.
var ErrInvalidBackup = errors.New("invalid backup")

// Backup writes a consistent copy of the whole database to w while the server goes on serving.
// SQLite's VACUUM INTO writes the copy from one read transaction (a WAL snapshot, so writers are
// not blocked) into a temporary file beside the database, which is then streamed and removed.
func (s *Store) Backup(ctx context.Context, w io.Writer) error {
	tmp, err := s.tempFile("backup-*.db")
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer removeDatabaseFiles(tmp)
	if _, err := s.r.ExecContext(ctx, `VACUUM INTO ?`, tmp); err != nil {
		return fmt.Errorf("backup: copy the database: %w", err)
	}
	f, err := os.Open(tmp)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer f.Close()
	if _, err := io.Copy(w, f); err != nil {
		return fmt.Errorf("backup: send the copy: %w", err)
	}
	return nil
}

// Restored says what a Restore replaced.
type Restored struct {
	// Tables counts the tables whose rows were replaced; Rows the rows copied in.
	Tables int
	Rows   int64
}

// Restore replaces the live data with the backup at path (a file Backup wrote). It checks the
// file first, on a private copy: SQLite's integrity check must pass, the file must carry
// superfluid's schema_migrations with no version newer than this build, and every live table
// must be there. A backup from an older build is brought up to date (the migrations it lacks
// run on the copy). Then, in one write transaction, every live table is emptied and refilled
// from the copy, so a refused or failed restore leaves the live database as it was. A refusal
// of the file wraps ErrInvalidBackup.
func (s *Store) Restore(ctx context.Context, path string) (Restored, error) {
	tmp, err := s.tempFile("restore-*.db")
	if err != nil {
		return Restored{}, fmt.Errorf("restore: %w", err)
	}
	defer removeDatabaseFiles(tmp)
	if err := copyFile(tmp, path); err != nil {
		return Restored{}, fmt.Errorf("restore: %w", err)
	}
	if err := checkBackup(ctx, tmp); err != nil {
		return Restored{}, fmt.Errorf("restore: %w: %w", ErrInvalidBackup, err)
	}
	if err := migrateBackup(ctx, tmp); err != nil {
		return Restored{}, fmt.Errorf("restore: %w: %w", ErrInvalidBackup, err)
	}
	return s.replaceFrom(ctx, tmp)
}

// checkBackup opens the database at path (a private copy) read-only and says why it is not a
// backup of this build's database, or nil.
func checkBackup(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", readOnlyDSN(path))
	if err != nil {
		return err
	}
	defer db.Close()
	var verdict string
	if err := db.QueryRowContext(ctx, `PRAGMA integrity_check(1)`).Scan(&verdict); err != nil {
		return fmt.Errorf("not a readable SQLite database: %w", err)
	}
	if verdict != "ok" {
		return fmt.Errorf("the database is damaged: %s", verdict)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&n); err != nil {
		return fmt.Errorf("not a readable SQLite database: %w", err)
	}
	if n == 0 {
		return errors.New("not a superfluid database (it has no schema_migrations table)")
	}
	have, err := appliedVersions(ctx, db)
	if err != nil {
		return fmt.Errorf("not a superfluid database: %w", err)
	}
	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		return err
	}
	latest := ms[len(ms)-1].version
	for _, v := range have {
		if !slices.ContainsFunc(ms, func(m migration) bool { return m.version == v }) {
			return fmt.Errorf("written by a newer superfluid (it has schema version %d; this build knows up to %d)", v, latest)
		}
	}
	if len(have) == 0 {
		return errors.New("not a superfluid database (no schema version recorded)")
	}
	return nil
}

// readOnlyDSN opens the database at path read-only with no pragma that could write (a reader
// of the live database sets WAL; a backup is not switched).
func readOnlyDSN(path string) string {
	u := url.URL{Scheme: "file", OmitHost: true, Path: filepath.ToSlash(path)}
	return u.String() + "?mode=ro&_pragma=query_only(1)"
}

// migrateBackup applies the migrations the copy at path lacks, as Open would.
func migrateBackup(ctx context.Context, path string) error {
	db, err := openOneConn(dsn(path, poolWriter))
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := migrate(ctx, db, migrationFiles); err != nil {
		return fmt.Errorf("bring the backup's schema up to date: %w", err)
	}
	// Fold the copy's WAL into its file, so the ATTACH that follows reads one file.
	if _, err := db.ExecContext(ctx, `PRAGMA journal_mode=DELETE`); err != nil {
		return fmt.Errorf("bring the backup's schema up to date: %w", err)
	}
	return nil
}

// replaceFrom copies every live table's rows from the checked database at path over the live
// ones, in one transaction on the writer's connection.
func (s *Store) replaceFrom(ctx context.Context, path string) (_ Restored, err error) {
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return Restored{}, fmt.Errorf("restore: %w", err)
	}
	defer conn.Close()
	// ATTACH cannot run inside a transaction, so it comes first and is undone last.
	if _, err := conn.ExecContext(ctx, `ATTACH DATABASE ? AS backup`, path); err != nil {
		return Restored{}, fmt.Errorf("restore: attach the backup: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `DETACH DATABASE backup`)

	tables, err := liveTables(ctx, conn)
	if err != nil {
		return Restored{}, fmt.Errorf("restore: %w", err)
	}
	for _, t := range tables {
		missing, err := missingColumns(ctx, conn, t)
		if err != nil {
			return Restored{}, fmt.Errorf("restore: %w", err)
		}
		if len(missing) > 0 {
			return Restored{}, fmt.Errorf("restore: %w: table %s lacks %s", ErrInvalidBackup, t.name, strings.Join(missing, ", "))
		}
	}

	tx, err := conn.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the writer's DSN
	if err != nil {
		return Restored{}, fmt.Errorf("restore: %w", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	// Foreign keys are checked at COMMIT, when every table holds the backup's rows.
	if _, err := tx.ExecContext(ctx, `PRAGMA defer_foreign_keys = ON`); err != nil {
		return Restored{}, fmt.Errorf("restore: %w", err)
	}
	// Every table is emptied (children first) before any is filled (parents first): an ON
	// DELETE CASCADE then only ever deletes old rows.
	for _, t := range slices.Backward(tables) {
		if restoreKeeps[t.name] {
			continue
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM main.`+quoteName(t.name)); err != nil {
			return Restored{}, fmt.Errorf("restore: empty %s: %w", t.name, err)
		}
	}
	var out Restored
	for _, t := range tables {
		if restoreKeeps[t.name] || restoreEmpties[t.name] {
			continue
		}
		cols := quoteNames(t.columns)
		res, err := tx.ExecContext(ctx, `INSERT INTO main.`+quoteName(t.name)+` (`+cols+`) SELECT `+cols+` FROM backup.`+quoteName(t.name))
		if err != nil {
			return Restored{}, fmt.Errorf("restore: fill %s: %w", t.name, err)
		}
		n, _ := res.RowsAffected()
		out.Rows += n
		out.Tables++
	}
	if err := restoreSequences(ctx, tx); err != nil {
		return Restored{}, fmt.Errorf("restore: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return Restored{}, fmt.Errorf("restore: commit: %w", err)
	}
	return out, nil
}

// restoreKeeps are the tables a restore leaves as they are: the sign-in failures, so a restore
// does not reset a lockout. restoreEmpties are those it empties and does not fill: the web
// sessions, so no session signed out (or ended by a password change) since the backup comes
// back; everyone signs in again, under the backup's people and passwords (rev20a).
var (
	restoreKeeps   = map[string]bool{"web_signin_failures": true}
	restoreEmpties = map[string]bool{"web_sessions": true}
)

// table is one live table: its name and columns.
type table struct {
	name    string
	columns []string
}

// liveTables lists the live schema's tables (not SQLite's own, not schema_migrations, which
// already says what this build has) with their columns, parents before the tables whose
// foreign keys name them.
func liveTables(ctx context.Context, conn *sql.Conn) ([]table, error) {
	names, err := scanStrings(ctx, conn, `SELECT name FROM main.sqlite_schema WHERE type = 'table'
		AND name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations' ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	parents := map[string][]string{}
	cols := map[string][]string{}
	for _, n := range names {
		if parents[n], err = scanStrings(ctx, conn, `SELECT DISTINCT "table" FROM pragma_foreign_key_list(?, 'main')`, n); err != nil {
			return nil, fmt.Errorf("foreign keys of %s: %w", n, err)
		}
		if cols[n], err = scanStrings(ctx, conn, `SELECT name FROM pragma_table_info(?, 'main') ORDER BY cid`, n); err != nil {
			return nil, fmt.Errorf("columns of %s: %w", n, err)
		}
	}
	var out []table
	placed := map[string]bool{}
	var place func(n string, seen map[string]bool)
	place = func(n string, seen map[string]bool) {
		if placed[n] || seen[n] {
			return // placed already, or a cycle (deferred foreign keys cope with it)
		}
		seen[n] = true
		for _, p := range parents[n] {
			if _, ok := cols[p]; ok {
				place(p, seen)
			}
		}
		placed[n] = true
		out = append(out, table{name: n, columns: cols[n]})
	}
	for _, n := range names {
		place(n, map[string]bool{})
	}
	return out, nil
}

// missingColumns lists t's columns the attached backup's table of that name lacks (all of them
// when it has no such table).
func missingColumns(ctx context.Context, conn *sql.Conn, t table) ([]string, error) {
	have, err := scanStrings(ctx, conn, `SELECT name FROM pragma_table_info(?, 'backup')`, t.name)
	if err != nil {
		return nil, fmt.Errorf("columns of the backup's %s: %w", t.name, err)
	}
	var missing []string
	for _, c := range t.columns {
		if !slices.Contains(have, c) {
			missing = append(missing, c)
		}
	}
	return missing, nil
}

// restoreSequences carries AUTOINCREMENT counters over, so ids handed out after the restore
// continue the backup's.
func restoreSequences(ctx context.Context, tx *sql.Tx) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM backup.sqlite_schema WHERE name = 'sqlite_sequence'`).Scan(&n); err != nil || n == 0 {
		return err
	}
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM main.sqlite_schema WHERE name = 'sqlite_sequence'`).Scan(&n); err != nil || n == 0 {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM main.sqlite_sequence`); err != nil {
		return fmt.Errorf("autoincrement counters: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO main.sqlite_sequence (name, seq) SELECT name, seq FROM backup.sqlite_sequence`); err != nil {
		return fmt.Errorf("autoincrement counters: %w", err)
	}
	return nil
}

// scanStrings runs a query of one text column on conn.
func scanStrings(ctx context.Context, conn *sql.Conn, query string, args ...any) ([]string, error) {
	rows, err := conn.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// quoteName quotes an SQL identifier.
func quoteName(n string) string {
	return `"` + strings.ReplaceAll(n, `"`, `""`) + `"`
}

func quoteNames(ns []string) string {
	q := make([]string, len(ns))
	for i, n := range ns {
		q[i] = quoteName(n)
	}
	return strings.Join(q, ", ")
}

// tempFile makes an empty file beside the database (the data directory, mode 0600) and
// returns its path; VACUUM INTO accepts an empty file.
func (s *Store) tempFile(pattern string) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(s.path), pattern)
	if err != nil {
		return "", err
	}
	return f.Name(), f.Close()
}

// copyFile copies the file at src over dst.
func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// removeDatabaseFiles removes a temporary database and the journal files SQLite may have left
// beside it.
func removeDatabaseFiles(path string) {
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		os.Remove(path + suffix)
	}
}
