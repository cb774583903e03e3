package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// RequestRecord is one chat/completion request the server answered.
type RequestRecord struct {
	ID                 string // e.g. "chatcmpl-..."; required and unique
	Model              string
	Endpoint           string // e.g. "/v1/chat/completions"
	Stream             bool   // reports whether the response was streamed
	Status             int    // HTTP status sent
	Error              string // message when the request failed
	FinishReason       string
	PromptTokens       int
	CompletionTokens   int
	CachedTokens       int
	Lane               int
	Queue              time.Duration // stored in whole microseconds
	Prefill            time.Duration // stored in whole microseconds
	Decode             time.Duration // stored in whole microseconds
	Total              time.Duration // stored in whole microseconds
	ClientDisconnected bool          // reports whether the client went away before the end
	CreatedAt          time.Time     // stored in UTC, nanosecond precision; zero means now
}

// requestColumns is the column list every request query selects, in
// scanRequest's order.
const requestColumns = `id, model, endpoint, stream, status, error, finish_reason,
	prompt_tokens, completion_tokens, cached_tokens, lane,
	queue_us, prefill_us, decode_us, total_us, client_disconnected, created_at`

// RecordRequest stores r. Durations are truncated to microseconds; a zero
// CreatedAt is set to the current time. Recording an ID twice is an error.
func (s *Store) RecordRequest(ctx context.Context, r RequestRecord) error {
	if r.ID == "" {
		return errors.New("record request: empty id")
	}
	created := r.CreatedAt
	if created.IsZero() {
		created = time.Now()
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO requests (`+requestColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Model, r.Endpoint, boolInt(r.Stream), r.Status, r.Error, r.FinishReason,
		r.PromptTokens, r.CompletionTokens, r.CachedTokens, r.Lane,
		r.Queue.Microseconds(), r.Prefill.Microseconds(), r.Decode.Microseconds(), r.Total.Microseconds(),
		boolInt(r.ClientDisconnected), formatTime(created))
	if err != nil {
		return fmt.Errorf("record request %s: %w", r.ID, err)
	}
	return nil
}

// Request returns the record with the given id, or an error wrapping
// ErrNotFound.
func (s *Store) Request(ctx context.Context, id string) (RequestRecord, error) {
	row := s.r.QueryRowContext(ctx, `SELECT `+requestColumns+` FROM requests WHERE id = ?`, id)
	r, err := scanRequest(row)
	if errors.Is(err, sql.ErrNoRows) {
		return RequestRecord{}, fmt.Errorf("request %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return RequestRecord{}, fmt.Errorf("request %s: %w", id, err)
	}
	return r, nil
}

// RecentRequests returns up to limit records, newest (by CreatedAt) first;
// records with the same CreatedAt come in reverse order of recording. A
// limit of zero or less returns none.
func (s *Store) RecentRequests(ctx context.Context, limit int) ([]RequestRecord, error) {
	out := []RequestRecord{}
	if limit <= 0 {
		return out, nil
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+requestColumns+` FROM requests
		ORDER BY created_at DESC, rowid DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("recent requests: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanRequest(rows)
		if err != nil {
			return nil, fmt.Errorf("recent requests: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("recent requests: %w", err)
	}
	return out, nil
}

// scanRequest reads one row of requestColumns.
func scanRequest(row interface{ Scan(...any) error }) (RequestRecord, error) {
	var (
		r                             RequestRecord
		stream, disconnected          int
		queue, prefill, decode, total int64
		created                       string
	)
	err := row.Scan(&r.ID, &r.Model, &r.Endpoint, &stream, &r.Status, &r.Error, &r.FinishReason,
		&r.PromptTokens, &r.CompletionTokens, &r.CachedTokens, &r.Lane,
		&queue, &prefill, &decode, &total, &disconnected, &created)
	if err != nil {
		return RequestRecord{}, err
	}
	r.Stream = stream != 0
	r.ClientDisconnected = disconnected != 0
	r.Queue = time.Duration(queue) * time.Microsecond
	r.Prefill = time.Duration(prefill) * time.Microsecond
	r.Decode = time.Duration(decode) * time.Microsecond
	r.Total = time.Duration(total) * time.Microsecond
	if r.CreatedAt, err = parseTime(created); err != nil {
		return RequestRecord{}, fmt.Errorf("created_at %q: %w", created, err)
	}
	return r, nil
}
