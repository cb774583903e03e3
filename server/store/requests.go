package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
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
	// Warning is what the server noticed about a reply it still served (e.g. a tool call
	// that did not parse); "" when nothing.
	Warning string
	// KeyID and KeyName are the API key that made the request (its stable id and its name);
	// "" for a request made without keys.
	KeyID, KeyName string
	// PersonID and PersonName are the person whose key it was (team mode); "" otherwise.
	PersonID, PersonName string
	// LaneName and Engine are the team-mode lane that served the request and its engine kind
	// (local, openai, command); "" for a request no lane served. (Lane is the worker's
	// sequence.)
	LaneName, Engine string
	// SpecProposed and SpecAccepted are speculative decoding's drafted and kept tokens (0
	// when it did not run); RestoredTokens the cached tokens read back from the prefix cache
	// on disk; CacheMiss why the prompt was not served whole from the cache ("" for a hit).
	SpecProposed, SpecAccepted int
	RestoredTokens             int
	CacheMiss                  string
	// Adapters are the LoRA adapters the request ran with, a JSON array of {"id", "scale"};
	// "" for the bare model.
	Adapters  string
	CreatedAt time.Time // stored in UTC, nanosecond precision; zero means now
}

// requestColumns is the column list every request query selects, in
// scanRequest's order.
const requestColumns = `id, model, endpoint, stream, status, error, finish_reason,
	prompt_tokens, completion_tokens, cached_tokens, lane,
	queue_us, prefill_us, decode_us, total_us, client_disconnected, warning, key_id, key_name, person_id, person_name, lane_name, engine,
	spec_proposed, spec_accepted, restored_tokens, cache_miss, adapters, created_at`

// RecordRequest stores r now, through the records writer, and returns when
// it is committed (Record queues it instead). Durations are truncated to
// microseconds; a zero CreatedAt is set to the current time. Recording an ID
// twice is an error.
func (s *Store) RecordRequest(ctx context.Context, r RequestRecord) error {
	return s.RecordRequests(ctx, []RequestRecord{r})
}

// RecordRequests stores rs in one transaction through the records writer
// (synchronous=NORMAL). A record that cannot be stored (an empty or
// repeated ID) is left out and its error returned, joined with the others';
// the rest are committed.
func (s *Store) RecordRequests(ctx context.Context, rs []RequestRecord) (err error) {
	if len(rs) == 0 {
		return nil
	}
	tx, err := s.rw.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("record requests: %w", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO requests (`+requestColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("record requests: %w", err)
	}
	defer stmt.Close()
	var errs []error
	for _, r := range rs {
		// A failed INSERT (a constraint) undoes that statement only; the transaction goes on.
		if err := insertRequest(ctx, stmt, r); err != nil {
			errs = append(errs, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("record requests: commit %d records: %w", len(rs), err)
	}
	return errors.Join(errs...)
}

func insertRequest(ctx context.Context, stmt *sql.Stmt, r RequestRecord) error {
	if r.ID == "" {
		return errors.New("record request: empty id")
	}
	created := r.CreatedAt
	if created.IsZero() {
		created = time.Now()
	}
	_, err := stmt.ExecContext(ctx, r.ID, r.Model, r.Endpoint, boolInt(r.Stream), r.Status, r.Error, r.FinishReason,
		r.PromptTokens, r.CompletionTokens, r.CachedTokens, r.Lane,
		r.Queue.Microseconds(), r.Prefill.Microseconds(), r.Decode.Microseconds(), r.Total.Microseconds(),
		boolInt(r.ClientDisconnected), r.Warning, r.KeyID, r.KeyName, r.PersonID, r.PersonName, r.LaneName, r.Engine,
		r.SpecProposed, r.SpecAccepted, r.RestoredTokens, r.CacheMiss, r.Adapters, formatTime(created))
	if err != nil {
		return fmt.Errorf("record request %s: %w", r.ID, err)
	}
	return nil
}

// pruneBatch is how many records one prune statement deletes: few, so that
// the records writer's inserts wait for at most one small transaction.
const pruneBatch = 500

// PruneRequests deletes the request records created before the given time,
// in batches of a few hundred (one transaction each), and returns how many
// it deleted.
func (s *Store) PruneRequests(ctx context.Context, before time.Time) (int64, error) {
	return s.pruneRequests(ctx, before, pruneBatch)
}

func (s *Store) pruneRequests(ctx context.Context, before time.Time, batch int) (int64, error) {
	var total int64
	for {
		res, err := s.rw.ExecContext(ctx, `DELETE FROM requests WHERE rowid IN
			(SELECT rowid FROM requests WHERE created_at < ? ORDER BY created_at LIMIT ?)`, formatTime(before), batch)
		if err != nil {
			return total, fmt.Errorf("prune request records: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, fmt.Errorf("prune request records: %w", err)
		}
		total += n
		if n < int64(batch) {
			return total, nil
		}
	}
}

// pruneLoop deletes the records older than keep now and then every interval, until ctx ends;
// done, when set, hears of each pass.
func (s *Store) pruneLoop(ctx context.Context, keep, every time.Duration, done func(int64, error)) {
	defer s.housework.Done()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		n, err := s.PruneRequests(ctx, time.Now().Add(-keep))
		switch {
		case err != nil && ctx.Err() == nil:
			slog.Warn("old request records were not pruned; they will be at the next pass", "err", err)
		case n > 0:
			slog.Info("pruned old request records", "deleted", n, "kept", keep)
		}
		if done != nil {
			done(n, err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
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
		&queue, &prefill, &decode, &total, &disconnected, &r.Warning, &r.KeyID, &r.KeyName, &r.PersonID, &r.PersonName, &r.LaneName, &r.Engine,
		&r.SpecProposed, &r.SpecAccepted, &r.RestoredTokens, &r.CacheMiss, &r.Adapters, &created)
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
