package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Batch statuses, as the OpenAI API names them.
const (
	BatchValidating = "validating"
	BatchInProgress = "in_progress"
	BatchCancelling = "cancelling"
	BatchCompleted  = "completed"
	BatchFailed     = "failed"
	BatchCancelled  = "cancelled"
)

// ErrQueueFull is returned by CreateBatch when too many batches wait already.
var ErrQueueFull = errors.New("batch queue full")

// ErrBatchNotRunning is returned when a line's result or a batch's end is saved for a batch that
// is not running (any more): finished, failed or cancelled meanwhile.
var ErrBatchNotRunning = errors.New("batch is not running")

// Batch is one batch's row (see migrations/0008_files_batches.sql).
type Batch struct {
	ID               string // "batch_" and hex digits; required and unique
	Endpoint         string
	InputFileID      string
	CompletionWindow string
	Status           string // one of the Batch* statuses
	// Model is the model its lines name (the first line's), known once validated.
	Model string
	// Metadata is the client's JSON object; nil for none (null).
	Metadata json.RawMessage
	// Errors are why a failed batch failed (validation errors).
	Errors                    []BatchError
	OutputFileID, ErrorFileID string
	// OutputExpires is how long the output and error files are kept; 0 for the store's default.
	OutputExpires time.Duration
	// Total is the number of lines; Completed and Failed count the lines done so far.
	Total, Completed, Failed int
	// Token counts summed over the lines done.
	InputTokens, CachedTokens, OutputTokens int64
	// CreatedAt is stored in UTC with nanosecond precision; zero means now. The other times are
	// zero until the batch reaches them.
	CreatedAt, ExpiresAt, InProgressAt, FinalizingAt, CompletedAt, FailedAt, CancellingAt, CancelledAt time.Time
	// Owner and OwnerName are the id and name of the API key that made the batch; "" when made
	// without keys. Its lines' request records are made in that key's name.
	Owner, OwnerName string
}

// BatchError is one reason a batch failed, in the OpenAI API's shape.
type BatchError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Param   string `json:"param,omitempty"`
	// Line is the input line at fault, from 1; 0 when the error is not about one line.
	Line int `json:"line,omitempty"`
}

// LineUsage is what one batch line's request used, added to its batch's token counts.
type LineUsage struct {
	InputTokens, CachedTokens, OutputTokens int64
}

var batchFields = []string{"id", "endpoint", "input_file_id", "completion_window", "status", "model", "metadata", "errors",
	"output_file_id", "error_file_id", "output_expires", "total", "completed", "failed", "input_tokens", "cached_tokens",
	"output_tokens", "created_at", "expires_at", "in_progress_at", "finalizing_at", "completed_at", "failed_at",
	"cancelling_at", "cancelled_at", "owner", "owner_name"}

var batchColumns = strings.Join(batchFields, ", ")

// CreateBatch stores a new batch. With maxWaiting > 0 it fails with an error wrapping
// ErrQueueFull when that many batches are validating already (waiting for their turn); the
// count and the insert are one transaction.
func (s *Store) CreateBatch(ctx context.Context, b Batch, maxWaiting int) error {
	if b.ID == "" {
		return errors.New("save batch: empty id")
	}
	if b.CreatedAt.IsZero() {
		b.CreatedAt = time.Now()
	}
	errs, err := json.Marshal(nonNilErrors(b.Errors))
	if err != nil {
		return fmt.Errorf("save batch %s: %w", b.ID, err)
	}
	var metadata any
	if len(b.Metadata) > 0 {
		metadata = string(b.Metadata)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("save batch %s: %w", b.ID, err)
	}
	defer tx.Rollback()
	if maxWaiting > 0 {
		var waiting int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM batches WHERE status = ?`, BatchValidating).Scan(&waiting); err != nil {
			return fmt.Errorf("save batch %s: %w", b.ID, err)
		}
		if waiting >= maxWaiting {
			return fmt.Errorf("%w: %d batches are waiting", ErrQueueFull, waiting)
		}
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO batches (`+batchColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		b.ID, b.Endpoint, b.InputFileID, b.CompletionWindow, b.Status, b.Model, metadata, string(errs),
		b.OutputFileID, b.ErrorFileID, int64(b.OutputExpires/time.Second), b.Total, b.Completed, b.Failed,
		b.InputTokens, b.CachedTokens, b.OutputTokens, formatTime(b.CreatedAt), optionalTime(b.ExpiresAt),
		optionalTime(b.InProgressAt), optionalTime(b.FinalizingAt), optionalTime(b.CompletedAt), optionalTime(b.FailedAt),
		optionalTime(b.CancellingAt), optionalTime(b.CancelledAt), b.Owner, b.OwnerName)
	if err != nil {
		return fmt.Errorf("save batch %s: %w", b.ID, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("save batch %s: %w", b.ID, err)
	}
	return nil
}

func nonNilErrors(e []BatchError) []BatchError {
	if e == nil {
		return []BatchError{}
	}
	return e
}

// Batch returns the batch with the given id, or an error wrapping ErrNotFound.
func (s *Store) Batch(ctx context.Context, id string) (Batch, error) {
	return batchFrom(ctx, s.r, id)
}

type queryRower interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func batchFrom(ctx context.Context, q queryRower, id string) (Batch, error) {
	b, err := scanBatch(q.QueryRowContext(ctx, `SELECT `+batchColumns+` FROM batches WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Batch{}, fmt.Errorf("batch %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Batch{}, fmt.Errorf("batch %s: %w", id, err)
	}
	return b, nil
}

// Batches lists up to limit batches, newest first, starting after the batch with id after
// ("" or an unknown id: from the newest).
func (s *Store) Batches(ctx context.Context, after string, limit int) ([]Batch, error) {
	return s.BatchesOf(ctx, nil, after, limit)
}

// BatchesOf is Batches keeping only the batches of owners (API key ids; "" for batches made
// without keys); nil keeps every batch.
func (s *Store) BatchesOf(ctx context.Context, owners []string, after string, limit int) ([]Batch, error) {
	query := `SELECT ` + batchColumns + ` FROM batches`
	var where []string
	var args []any
	if after != "" {
		var created string
		err := s.r.QueryRowContext(ctx, `SELECT created_at FROM batches WHERE id = ?`, after).Scan(&created)
		switch {
		case err == nil:
			where = append(where, `(created_at, id) < (?, ?)`)
			args = append(args, created, after)
		case !errors.Is(err, sql.ErrNoRows):
			return nil, fmt.Errorf("list batches: %w", err)
		}
	}
	if owners != nil {
		clause, more := ownedBy(owners)
		where, args = append(where, clause), append(args, more...)
	}
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, max(1, limit))
	return s.queryBatches(ctx, query, args...)
}

// UnfinishedBatches lists the batches that are validating, in progress or cancelling, oldest
// first: what a batch runner has to run or resume.
func (s *Store) UnfinishedBatches(ctx context.Context) ([]Batch, error) {
	return s.queryBatches(ctx, `SELECT `+batchColumns+` FROM batches WHERE status IN (?, ?, ?)
		ORDER BY created_at, id`, BatchValidating, BatchInProgress, BatchCancelling)
}

func (s *Store) queryBatches(ctx context.Context, query string, args ...any) ([]Batch, error) {
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list batches: %w", err)
	}
	defer rows.Close()
	out := []Batch{}
	for rows.Next() {
		b, err := scanBatch(rows)
		if err != nil {
			return nil, fmt.Errorf("list batches: %w", err)
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list batches: %w", err)
	}
	return out, nil
}

// StartBatch moves a validated batch to in_progress with its line count and model. It fails
// with an error wrapping ErrBatchNotRunning when the batch is no longer validating (cancelled
// meanwhile).
func (s *Store) StartBatch(ctx context.Context, id string, total int, model string, at time.Time) error {
	return s.updateBatch(ctx, id, `status = ?, total = ?, model = ?, in_progress_at = ?`, []any{BatchInProgress, total, model, formatTime(at)},
		BatchValidating)
}

// FailBatch marks a batch that is validating or in progress failed, with the reasons.
func (s *Store) FailBatch(ctx context.Context, id string, reasons []BatchError, at time.Time) error {
	errs, err := json.Marshal(nonNilErrors(reasons))
	if err != nil {
		return fmt.Errorf("fail batch %s: %w", id, err)
	}
	return s.updateBatch(ctx, id, `status = ?, errors = ?, failed_at = ?`, []any{BatchFailed, string(errs), formatTime(at)},
		BatchValidating, BatchInProgress)
}

// updateBatch sets columns of the batch when its status is one of from; otherwise it fails
// with an error wrapping ErrBatchNotRunning (or ErrNotFound when there is no such batch).
func (s *Store) updateBatch(ctx context.Context, id, set string, args []any, from ...string) error {
	in := strings.TrimSuffix(strings.Repeat("?, ", len(from)), ", ")
	all := append(append(args, id), anySlice(from)...)
	res, err := s.w.ExecContext(ctx, `UPDATE batches SET `+set+` WHERE id = ? AND status IN (`+in+`)`, all...)
	if err != nil {
		return fmt.Errorf("update batch %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("update batch %s: %w", id, err)
	}
	if n == 0 {
		b, err := s.Batch(ctx, id)
		if err != nil {
			return err
		}
		return fmt.Errorf("batch %s is %s: %w", id, b.Status, ErrBatchNotRunning)
	}
	return nil
}

// ownedBy is the condition that keeps the rows of owners, and its arguments.
func ownedBy(owners []string) (string, []any) {
	if len(owners) == 0 {
		return "0", nil // "IN ()" is an error
	}
	return "owner IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(owners)), ", ") + ")", anySlice(owners)
}

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// CancelBatch asks a batch to stop. A batch still waiting its turn (validating) is cancelled
// at once when now is true; otherwise a validating or running batch becomes cancelling, for
// its runner to stop between lines. It returns the batch as it is afterwards, and whether the
// call changed it (false for a batch already cancelling or finished).
func (s *Store) CancelBatch(ctx context.Context, id string, now bool, at time.Time) (Batch, bool, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return Batch{}, false, fmt.Errorf("cancel batch %s: %w", id, err)
	}
	defer tx.Rollback()
	b, err := batchFrom(ctx, tx, id)
	if err != nil {
		return Batch{}, false, err
	}
	t := formatTime(at)
	switch {
	case b.Status == BatchValidating && now:
		_, err = tx.ExecContext(ctx, `UPDATE batches SET status = ?, cancelling_at = ?, cancelled_at = ? WHERE id = ?`, BatchCancelled, t, t, id)
	case b.Status == BatchValidating || b.Status == BatchInProgress:
		_, err = tx.ExecContext(ctx, `UPDATE batches SET status = ?, cancelling_at = ? WHERE id = ?`, BatchCancelling, t, id)
	default:
		return b, false, nil
	}
	if err != nil {
		return Batch{}, false, fmt.Errorf("cancel batch %s: %w", id, err)
	}
	if b, err = batchFrom(ctx, tx, id); err != nil {
		return Batch{}, false, err
	}
	if err := tx.Commit(); err != nil {
		return Batch{}, false, fmt.Errorf("cancel batch %s: %w", id, err)
	}
	return b, true, nil
}

// SaveBatchLine stores the result of line (from 0) of a running batch and counts it, completed
// or failed, with its usage: one transaction, so a line is either done, counted and kept, or
// not done at all. It fails with an error wrapping ErrBatchNotRunning when the batch is not in
// progress or cancelling, and with a constraint error when the line has a result already.
func (s *Store) SaveBatchLine(ctx context.Context, id string, line int, failed bool, result []byte, u LineUsage) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("save batch %s line %d: %w", id, line, err)
	}
	defer tx.Rollback()
	counter := "completed"
	if failed {
		counter = "failed"
	}
	res, err := tx.ExecContext(ctx, `UPDATE batches SET `+counter+` = `+counter+` + 1, input_tokens = input_tokens + ?,
		cached_tokens = cached_tokens + ?, output_tokens = output_tokens + ? WHERE id = ? AND status IN (?, ?)`,
		u.InputTokens, u.CachedTokens, u.OutputTokens, id, BatchInProgress, BatchCancelling)
	if err != nil {
		return fmt.Errorf("save batch %s line %d: %w", id, line, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("save batch %s line %d: %w", id, line, errors.Join(err, ErrBatchNotRunning))
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO batch_lines (batch_id, line, failed, result) VALUES (?, ?, ?, ?)`,
		id, line, boolInt(failed), string(result)); err != nil {
		return fmt.Errorf("save batch %s line %d: %w", id, line, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("save batch %s line %d: %w", id, line, err)
	}
	return nil
}

// BatchLinesDone lists the lines (from 0) of a batch that have a result, in order.
func (s *Store) BatchLinesDone(ctx context.Context, id string) ([]int, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT line FROM batch_lines WHERE batch_id = ? ORDER BY line`, id)
	if err != nil {
		return nil, fmt.Errorf("batch %s lines: %w", id, err)
	}
	defer rows.Close()
	var lines []int
	for rows.Next() {
		var n int
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("batch %s lines: %w", id, err)
		}
		lines = append(lines, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("batch %s lines: %w", id, err)
	}
	return lines, nil
}

// EachBatchLine calls fn with the result of every line of the batch that has one, in line
// order, the output lines (failed false) or the error lines (failed true).
func (s *Store) EachBatchLine(ctx context.Context, id string, failed bool, fn func(result []byte) error) error {
	rows, err := s.r.QueryContext(ctx, `SELECT result FROM batch_lines WHERE batch_id = ? AND failed = ? ORDER BY line`, id, boolInt(failed))
	if err != nil {
		return fmt.Errorf("batch %s results: %w", id, err)
	}
	defer rows.Close()
	var result []byte
	for rows.Next() {
		if err := rows.Scan(&result); err != nil {
			return fmt.Errorf("batch %s results: %w", id, err)
		}
		if err := fn(result); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("batch %s results: %w", id, err)
	}
	return nil
}

// BatchEnd is how a running batch ends.
type BatchEnd struct {
	// Status is BatchCompleted or BatchCancelled.
	Status string
	// Output and Errors are the rows of its output and error files (already on disk); nil
	// when the batch has no such file.
	Output, Errors *File
	// FinalizingAt is when writing the files began; At when the batch ended.
	FinalizingAt, At time.Time
}

// FinishBatch ends a running (in progress or cancelling) batch: its output and error files'
// rows are inserted (outside the quota: nothing acknowledged is refused), its status, file ids
// and times set, and its line results dropped, in one transaction. It fails with an error
// wrapping ErrBatchNotRunning when the batch is not running.
func (s *Store) FinishBatch(ctx context.Context, id string, end BatchEnd) error {
	if end.Status != BatchCompleted && end.Status != BatchCancelled {
		return fmt.Errorf("finish batch %s: status %q: want %s or %s", id, end.Status, BatchCompleted, BatchCancelled)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("finish batch %s: %w", id, err)
	}
	defer tx.Rollback()
	var outputID, errorID string
	if end.Output != nil {
		outputID = end.Output.ID
	}
	if end.Errors != nil {
		errorID = end.Errors.ID
	}
	endedAt := "completed_at"
	if end.Status == BatchCancelled {
		endedAt = "cancelled_at"
	}
	res, err := tx.ExecContext(ctx, `UPDATE batches SET status = ?, output_file_id = ?, error_file_id = ?, finalizing_at = ?, `+
		endedAt+` = ? WHERE id = ? AND status IN (?, ?)`, end.Status, outputID, errorID, formatTime(end.FinalizingAt),
		formatTime(end.At), id, BatchInProgress, BatchCancelling)
	if err != nil {
		return fmt.Errorf("finish batch %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("finish batch %s: %w", id, errors.Join(err, ErrBatchNotRunning))
	}
	for _, f := range []*File{end.Output, end.Errors} {
		if f != nil {
			if err := insertFile(ctx, tx, *f); err != nil {
				return err
			}
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM batch_lines WHERE batch_id = ?`, id); err != nil {
		return fmt.Errorf("finish batch %s: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("finish batch %s: %w", id, err)
	}
	return nil
}

// scanBatch reads one row of batchColumns.
func scanBatch(row interface{ Scan(...any) error }) (Batch, error) {
	var b Batch
	var metadata sql.NullString
	var errs string
	var expires int64
	times := make([]string, 8)
	dest := []any{&b.ID, &b.Endpoint, &b.InputFileID, &b.CompletionWindow, &b.Status, &b.Model, &metadata, &errs,
		&b.OutputFileID, &b.ErrorFileID, &expires, &b.Total, &b.Completed, &b.Failed, &b.InputTokens, &b.CachedTokens,
		&b.OutputTokens}
	for i := range times {
		dest = append(dest, &times[i])
	}
	dest = append(dest, &b.Owner, &b.OwnerName)
	if err := row.Scan(dest...); err != nil {
		return Batch{}, err
	}
	if metadata.Valid {
		b.Metadata = json.RawMessage(metadata.String)
	}
	if err := json.Unmarshal([]byte(errs), &b.Errors); err != nil {
		return Batch{}, fmt.Errorf("errors %q: %w", errs, err)
	}
	if len(b.Errors) == 0 {
		b.Errors = nil
	}
	b.OutputExpires = time.Duration(expires) * time.Second
	var err error
	if b.CreatedAt, err = parseTime(times[0]); err != nil {
		return Batch{}, fmt.Errorf("created_at %q: %w", times[0], err)
	}
	for i, dst := range []*time.Time{&b.ExpiresAt, &b.InProgressAt, &b.FinalizingAt, &b.CompletedAt, &b.FailedAt, &b.CancellingAt, &b.CancelledAt} {
		if *dst, err = parseOptionalTime(times[i+1]); err != nil {
			return Batch{}, fmt.Errorf("%s %q: %w", batchFields[18+i], times[i+1], err)
		}
	}
	return b, nil
}
