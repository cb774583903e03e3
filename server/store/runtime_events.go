package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// RuntimeEvent is one row of the runtime's load history (migrations/0020_runtime_events.sql).
type RuntimeEvent struct {
	ID int64
	// At is when; zero means now.
	At time.Time
	// Event is what happened: "loading", "loaded", "unloaded", "failed".
	Event string
	// Lane names the lanes serving the model then ("" for none); Model is its catalog id.
	Lane, Model string
	// Detail is the rest (a failure's reason).
	Detail string
}

// KeepRuntimeEvents is how many of the newest runtime events are kept.
const KeepRuntimeEvents = 10000

// AppendRuntimeEvent stores e and drops the rows past the newest KeepRuntimeEvents.
func (s *Store) AppendRuntimeEvent(ctx context.Context, e RuntimeEvent) (RuntimeEvent, error) {
	if e.Event == "" {
		return e, errors.New("runtime event: empty event")
	}
	if e.At.IsZero() {
		e.At = time.Now()
	}
	e.At = e.At.UTC()
	res, err := s.w.ExecContext(ctx, `INSERT INTO runtime_events (at, event, lane, model, detail) VALUES (?, ?, ?, ?, ?)`,
		formatTime(e.At), e.Event, e.Lane, e.Model, e.Detail)
	if err != nil {
		return e, fmt.Errorf("runtime event %s: %w", e.Event, err)
	}
	if e.ID, err = res.LastInsertId(); err != nil {
		return e, fmt.Errorf("runtime event %s: %w", e.Event, err)
	}
	if _, err := s.w.ExecContext(ctx, `DELETE FROM runtime_events WHERE id <= ?`, e.ID-KeepRuntimeEvents); err != nil {
		return e, fmt.Errorf("runtime event %s: prune: %w", e.Event, err)
	}
	return e, nil
}

// RuntimeEvents lists up to limit runtime events (1..1000; 0 is 100) newest first, only those
// before the given time when it is set.
func (s *Store) RuntimeEvents(ctx context.Context, limit int, before time.Time) ([]RuntimeEvent, error) {
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	query, args := `SELECT id, at, event, lane, model, detail FROM runtime_events`, []any{}
	if !before.IsZero() {
		query, args = query+` WHERE at < ?`, append(args, formatTime(before))
	}
	out, err := queryRows(ctx, s, "list runtime events", func(row interface{ Scan(...any) error }) (RuntimeEvent, error) {
		var e RuntimeEvent
		var at string
		if err := row.Scan(&e.ID, &at, &e.Event, &e.Lane, &e.Model, &e.Detail); err != nil {
			return e, err
		}
		var err error
		e.At, err = parseTime(at)
		return e, err
	}, query+` ORDER BY at DESC, id DESC LIMIT ?`, append(args, limit)...)
	if out == nil && err == nil {
		out = []RuntimeEvent{}
	}
	return out, err
}
