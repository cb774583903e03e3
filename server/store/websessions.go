package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// WebSession is one stored web session (see migrations/0018_web_sessions.sql).
type WebSession struct {
	// IDHash is the hex SHA-256 of the session's id; the id itself is never stored.
	IDHash    string
	PersonID  string
	CSRFToken string
	// CreatedAt is the sign-in, LastSeenAt the last use, IssuedAt when this id was issued.
	CreatedAt, LastSeenAt, IssuedAt time.Time
	// GraceUntil, when set, is when a rotated-out id stops working.
	GraceUntil time.Time
}

// InsertWebSession stores a new session.
func (s *Store) InsertWebSession(ctx context.Context, ws WebSession) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO web_sessions (id_hash, person_id, csrf_token, created_at, last_seen_at, issued_at, grace_until)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, ws.IDHash, ws.PersonID, ws.CSRFToken, formatTime(ws.CreatedAt), formatTime(ws.LastSeenAt),
		formatTime(ws.IssuedAt), optionalTime(ws.GraceUntil))
	if err != nil {
		return fmt.Errorf("save web session: %w", err)
	}
	return nil
}

// WebSessionByHash returns the session whose id hashes to idHash; ErrNotFound when none.
func (s *Store) WebSessionByHash(ctx context.Context, idHash string) (WebSession, error) {
	row := s.r.QueryRowContext(ctx, `SELECT id_hash, person_id, csrf_token, created_at, last_seen_at, issued_at, grace_until
		FROM web_sessions WHERE id_hash = ?`, idHash)
	var ws WebSession
	var created, seen, issued, grace string
	err := row.Scan(&ws.IDHash, &ws.PersonID, &ws.CSRFToken, &created, &seen, &issued, &grace)
	if errors.Is(err, sql.ErrNoRows) {
		return ws, fmt.Errorf("web session: %w", ErrNotFound)
	}
	if err != nil {
		return ws, fmt.Errorf("web session: %w", err)
	}
	for _, f := range []struct {
		text string
		to   *time.Time
	}{{created, &ws.CreatedAt}, {seen, &ws.LastSeenAt}, {issued, &ws.IssuedAt}, {grace, &ws.GraceUntil}} {
		if f.text == "" {
			continue
		}
		if *f.to, err = parseTime(f.text); err != nil {
			return ws, fmt.Errorf("web session: %w", err)
		}
	}
	return ws, nil
}

// TouchWebSession records a use of the session at at.
func (s *Store) TouchWebSession(ctx context.Context, idHash string, at time.Time) error {
	if _, err := s.w.ExecContext(ctx, `UPDATE web_sessions SET last_seen_at = ? WHERE id_hash = ?`, formatTime(at), idHash); err != nil {
		return fmt.Errorf("touch web session: %w", err)
	}
	return nil
}

// RotateWebSession replaces the current session oldHash by next in one transaction: the old
// id keeps working until graceUntil. ErrNotFound when oldHash is gone or already rotated out
// (two requests racing to rotate: one wins, the other keeps the old id for the grace).
func (s *Store) RotateWebSession(ctx context.Context, oldHash string, next WebSession, graceUntil time.Time) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("rotate web session: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	res, err := tx.ExecContext(ctx, `UPDATE web_sessions SET grace_until = ? WHERE id_hash = ? AND grace_until = ''`,
		formatTime(graceUntil), oldHash)
	if err != nil {
		return fmt.Errorf("rotate web session: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("rotate web session: %w", ErrNotFound)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO web_sessions (id_hash, person_id, csrf_token, created_at, last_seen_at, issued_at, grace_until)
		VALUES (?, ?, ?, ?, ?, ?, '')`, next.IDHash, next.PersonID, next.CSRFToken, formatTime(next.CreatedAt), formatTime(next.LastSeenAt),
		formatTime(next.IssuedAt)); err != nil {
		return fmt.Errorf("rotate web session: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("rotate web session: %w", err)
	}
	return nil
}

// DeleteWebSession removes one session (nothing when it is gone).
func (s *Store) DeleteWebSession(ctx context.Context, idHash string) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM web_sessions WHERE id_hash = ?`, idHash); err != nil {
		return fmt.Errorf("remove web session: %w", err)
	}
	return nil
}

// DeleteWebSessionsByCSRF removes the session with this CSRF token: its current id and those
// rotated out of it.
func (s *Store) DeleteWebSessionsByCSRF(ctx context.Context, csrf string) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM web_sessions WHERE csrf_token = ?`, csrf); err != nil {
		return fmt.Errorf("remove web session: %w", err)
	}
	return nil
}

// DeleteWebSessionsOf removes every session of a person but those with csrfToken (the one
// session a password change keeps, with its rotated-out ids); "" keeps none.
func (s *Store) DeleteWebSessionsOf(ctx context.Context, personID, keepCSRF string) (int64, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM web_sessions WHERE person_id = ? AND (? = '' OR csrf_token <> ?)`, personID, keepCSRF, keepCSRF)
	if err != nil {
		return 0, fmt.Errorf("remove web sessions: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// DeleteExpiredWebSessions removes the sessions unused since idleBefore, signed in before
// createdBefore, or rotated out with their grace over at now.
func (s *Store) DeleteExpiredWebSessions(ctx context.Context, idleBefore, createdBefore, now time.Time) (int64, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM web_sessions WHERE last_seen_at < ? OR created_at < ? OR (grace_until <> '' AND grace_until < ?)`,
		formatTime(idleBefore), formatTime(createdBefore), formatTime(now))
	if err != nil {
		return 0, fmt.Errorf("remove expired web sessions: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// InsertSignInFailure records a failed sign-in.
func (s *Store) InsertSignInFailure(ctx context.Context, at time.Time, account, address string) error {
	if _, err := s.w.ExecContext(ctx, `INSERT INTO web_signin_failures (at, account, address) VALUES (?, ?, ?)`,
		formatTime(at), account, address); err != nil {
		return fmt.Errorf("save sign-in failure: %w", err)
	}
	return nil
}

// SignInFailures returns the times of the failed sign-ins since since, oldest first: those for
// account and those from address.
func (s *Store) SignInFailures(ctx context.Context, account, address string, since time.Time) (byAccount, byAddress []time.Time, err error) {
	scan := func(row interface{ Scan(...any) error }) (time.Time, error) {
		var at string
		if err := row.Scan(&at); err != nil {
			return time.Time{}, err
		}
		return parseTime(at)
	}
	from := formatTime(since)
	if byAccount, err = queryRows(ctx, s, "sign-in failures", scan,
		`SELECT at FROM web_signin_failures WHERE account = ? AND at >= ? ORDER BY at`, account, from); err != nil {
		return nil, nil, err
	}
	if byAddress, err = queryRows(ctx, s, "sign-in failures", scan,
		`SELECT at FROM web_signin_failures WHERE address = ? AND at >= ? ORDER BY at`, address, from); err != nil {
		return nil, nil, err
	}
	return byAccount, byAddress, nil
}

// DeleteSignInFailuresBefore removes the failures older than before.
func (s *Store) DeleteSignInFailuresBefore(ctx context.Context, before time.Time) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM web_signin_failures WHERE at < ?`, formatTime(before)); err != nil {
		return fmt.Errorf("remove sign-in failures: %w", err)
	}
	return nil
}
