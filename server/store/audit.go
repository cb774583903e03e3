package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// AuditEntry is one row of the audit log (see migrations/0011_people.sql): who did what to
// what, and when.
type AuditEntry struct {
	// ID is assigned by AppendAudit; entries are listed newest (highest id) first.
	ID int64
	// At is when; zero means now.
	At time.Time
	// ActorPerson and ActorName are the person who did it ("" for none: the CLI, a key of
	// nobody); ActorKey the name of the key the request carried ("" for none).
	ActorPerson, ActorName, ActorKey string
	// Action is what was done ("user.create", "key.create", ...); required.
	Action string
	// Target is what it was done to (a name).
	Target string
	// Detail is a JSON object of the rest; nil is {}.
	Detail json.RawMessage
}

// AppendAudit adds an entry to the audit log and returns it with its id and time.
func (s *Store) AppendAudit(ctx context.Context, e AuditEntry) (AuditEntry, error) {
	if e.Action == "" {
		return e, errors.New("audit: empty action")
	}
	if e.At.IsZero() {
		e.At = time.Now()
	}
	e.At = e.At.UTC()
	if len(e.Detail) == 0 {
		e.Detail = json.RawMessage("{}")
	}
	if !json.Valid(e.Detail) {
		return e, fmt.Errorf("audit %s: the detail is not JSON", e.Action)
	}
	res, err := s.w.ExecContext(ctx, `INSERT INTO audit_log (at, actor_person, actor_name, actor_key, action, target, detail)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, formatTime(e.At), e.ActorPerson, e.ActorName, e.ActorKey, e.Action, e.Target, string(e.Detail))
	if err != nil {
		return e, fmt.Errorf("audit %s: %w", e.Action, err)
	}
	if e.ID, err = res.LastInsertId(); err != nil {
		return e, fmt.Errorf("audit %s: %w", e.Action, err)
	}
	return e, nil
}

// AuditQuery selects audit entries: newest first, at most Limit (0: 100, at most 1000), only
// those with an id below Before when it is set (the next page), only those of Action when set.
type AuditQuery struct {
	Limit  int
	Before int64
	Action string
}

// Audit lists audit entries as q says.
func (s *Store) Audit(ctx context.Context, q AuditQuery) ([]AuditEntry, error) {
	if q.Limit <= 0 {
		q.Limit = 100
	}
	q.Limit = min(q.Limit, 1000)
	query := `SELECT id, at, actor_person, actor_name, actor_key, action, target, detail FROM audit_log WHERE 1 = 1`
	var args []any
	if q.Before > 0 {
		query += ` AND id < ?`
		args = append(args, q.Before)
	}
	if q.Action != "" {
		query += ` AND action = ?`
		args = append(args, q.Action)
	}
	rows, err := s.r.QueryContext(ctx, query+` ORDER BY id DESC LIMIT ?`, append(args, q.Limit)...)
	if err != nil {
		return nil, fmt.Errorf("list audit: %w", err)
	}
	defer rows.Close()
	var out []AuditEntry
	for rows.Next() {
		var e AuditEntry
		var at, detail string
		if err := rows.Scan(&e.ID, &at, &e.ActorPerson, &e.ActorName, &e.ActorKey, &e.Action, &e.Target, &detail); err != nil {
			return nil, fmt.Errorf("list audit: %w", err)
		}
		if e.At, err = parseTime(at); err != nil {
			return nil, fmt.Errorf("audit %d: at: %w", e.ID, err)
		}
		e.Detail = json.RawMessage(detail)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list audit: %w", err)
	}
	return out, nil
}
