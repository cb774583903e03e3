package batches

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/store"
)

// Batches: a JSONL input file of requests ({"custom_id", "method", "url", "body"} a line) run in
// the background through the same core calls as HTTP requests (see batchrun.go for the
// runner). The dialect that owns a url registers how to run its lines (ServeBatchLines).

// BatchConfig bounds the batch runner.
type BatchConfig struct {
	// Running is how many batches run at once (default 4); later ones wait in order.
	Running int
	// Waiting is how many batches may wait (default 256); past it CreateBatch refuses with
	// ErrBatchQueueFull.
	Waiting int
	// LinesAtOnce is how many lines of one batch run at once; 0 for as many as its model's
	// lanes share allows (one more than the lanes, see core.Model.TakeBatchLane), which keeps
	// them busy.
	LinesAtOnce int
	// Window is how long a batch has to complete (default 24h, the one window OpenAI offers).
	Window time.Duration
}

// Defaults of BatchConfig.
const (
	defaultRunning = 4
	defaultWaiting = 256
	defaultWindow  = 24 * time.Hour
	// maxBatchLines is the most lines one batch may have (OpenAI's limit).
	maxBatchLines = 50_000
)

// Batch statuses.
const (
	BatchValidating = store.BatchValidating
	BatchInProgress = store.BatchInProgress
	BatchCancelling = store.BatchCancelling
	BatchCompleted  = store.BatchCompleted
	BatchFailed     = store.BatchFailed
	BatchCancelled  = store.BatchCancelled
)

// BatchEndpoints are the urls a batch may run, in the order the spec names them.
var BatchEndpoints = []string{"/v1/chat/completions", "/v1/completions", "/v1/embeddings"}

// Batch is one batch job.
type Batch struct {
	ID, Endpoint, InputFileID, CompletionWindow, Status string
	// Model is the model the lines name (the first line's), once validated.
	Model string
	// Metadata is the client's JSON object; nil for none.
	Metadata json.RawMessage
	// Errors say why a failed batch failed.
	Errors                    []BatchError
	OutputFileID, ErrorFileID string
	// Total is the number of lines (once validated); Completed and Failed the lines done.
	Total, Completed, Failed int
	// Token counts summed over the lines done.
	InputTokens, CachedTokens, OutputTokens int64
	// Times; zero until the batch reaches them.
	CreatedAt, ExpiresAt, InProgressAt, FinalizingAt, CompletedAt, FailedAt, CancellingAt, CancelledAt time.Time
}

// BatchError is why a batch failed.
type BatchError struct {
	Code, Message, Param string
	// Line is the input line at fault, from 1; 0 when the error is not about one line.
	Line int
}

// NewBatch is a request to run a batch.
type NewBatch struct {
	InputFileID, Endpoint, CompletionWindow string
	Metadata                                json.RawMessage
	// OutputExpiresAfter is how long the output and error files are kept; 0 for the default.
	OutputExpiresAfter time.Duration
}

var (
	// ErrBatchNotFound is a batch id that names no batch.
	ErrBatchNotFound = errors.New("no such batch")
	// ErrBatchQueueFull refuses a batch while too many wait (429 batch_queue_full).
	ErrBatchQueueFull = errors.New("too many batches are waiting")
	// ErrBatchFinished refuses to cancel a batch that has ended.
	ErrBatchFinished = errors.New("the batch has ended")
)

// BatchNotFoundError names the id that was not found; it wraps ErrBatchNotFound.
type BatchNotFoundError struct{ ID string }

func (e *BatchNotFoundError) Error() string { return "no such batch: " + e.ID }

// Unwrap lets errors.Is(err, ErrBatchNotFound) match.
func (e *BatchNotFoundError) Unwrap() error { return ErrBatchNotFound }

var batchID = regexp.MustCompile(`^batch_[0-9a-f]{24}$`)

// LineResponse is what one batch line's request got, as its dialect serves it over HTTP.
type LineResponse struct {
	// Status is the HTTP status; 2xx lines go to the output file, others to the error file.
	Status int
	// Body is the response body, JSON.
	Body json.RawMessage
	// Usage is what the request used (added to the batch's usage).
	Usage llm.Usage
}

// LineError fails a line that got no HTTP response; it goes to the error file as
// {"code", "message"}.
type LineError struct{ Code, Message string }

func (e *LineError) Error() string { return e.Message }

// LineFunc runs one batch line's body as a request to the url it is registered for. It returns
// an error (a *LineError, ideally) only when there is no HTTP response to record.
type LineFunc func(ctx context.Context, body json.RawMessage) (LineResponse, error)

// ServeBatchLines registers how lines for url run (the dialect that serves url calls it); lines
// for a url nothing registered fail with unsupported_endpoint.
func (s *Service) ServeBatchLines(url string, run LineFunc) {
	r := &s.runner
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lines == nil {
		r.lines = map[string]LineFunc{}
	}
	r.lines[url] = run
}

func (s *Service) batchConfig() BatchConfig {
	c := s.cfg.Batches
	if c.Running <= 0 {
		c.Running = defaultRunning
	}
	if c.Waiting <= 0 {
		c.Waiting = defaultWaiting
	}
	if c.Window <= 0 {
		c.Window = defaultWindow
	}
	return c
}

func toBatch(b store.Batch) Batch {
	out := Batch{
		ID: b.ID, Endpoint: b.Endpoint, InputFileID: b.InputFileID, CompletionWindow: b.CompletionWindow, Status: b.Status,
		Model: b.Model, Metadata: b.Metadata, OutputFileID: b.OutputFileID, ErrorFileID: b.ErrorFileID,
		Total: b.Total, Completed: b.Completed, Failed: b.Failed,
		InputTokens: b.InputTokens, CachedTokens: b.CachedTokens, OutputTokens: b.OutputTokens,
		CreatedAt: b.CreatedAt, ExpiresAt: b.ExpiresAt, InProgressAt: b.InProgressAt, FinalizingAt: b.FinalizingAt,
		CompletedAt: b.CompletedAt, FailedAt: b.FailedAt, CancellingAt: b.CancellingAt, CancelledAt: b.CancelledAt,
	}
	for _, e := range b.Errors {
		out.Errors = append(out.Errors, BatchError{Code: e.Code, Message: e.Message, Param: e.Param, Line: e.Line})
	}
	return out
}

// CreateBatch queues a batch. The input file must exist and be uploaded for purpose "batch";
// the endpoint must be one of BatchEndpoints. Its lines are checked when its turn comes (the
// batch is "validating" until then): a bad line fails the whole batch before any line runs.
func (s *Service) CreateBatch(ctx context.Context, nb NewBatch) (Batch, error) {
	if err := s.filesReady(); err != nil {
		return Batch{}, err
	}
	if !slices.Contains(BatchEndpoints, nb.Endpoint) {
		return Batch{}, fmt.Errorf("%w: endpoint %q cannot be batched; use one of %v", llm.ErrInvalidInput, nb.Endpoint, BatchEndpoints)
	}
	f, err := s.file(ctx, nb.InputFileID)
	if err != nil {
		return Batch{}, err
	}
	if f.Purpose != "batch" {
		return Batch{}, fmt.Errorf("%w: file %s was uploaded with purpose %q; upload the input with purpose \"batch\"", llm.ErrInvalidInput, f.ID, f.Purpose)
	}
	cfg := s.batchConfig()
	now := time.Now()
	b := store.Batch{
		ID: "batch_" + randomHex(12), Endpoint: nb.Endpoint, InputFileID: f.ID, CompletionWindow: nb.CompletionWindow,
		Status: store.BatchValidating, Metadata: nb.Metadata, OutputExpires: nb.OutputExpiresAfter,
		CreatedAt: now, ExpiresAt: now.Add(cfg.Window),
	}
	if who, ok := auth.FromContext(ctx); ok {
		b.Owner, b.OwnerName = who.ID, who.Name
	}
	if err := s.store.CreateBatch(ctx, b, cfg.Waiting); err != nil {
		if errors.Is(err, store.ErrQueueFull) {
			return Batch{}, fmt.Errorf("%w: %d batches are waiting already; retry once some have run", ErrBatchQueueFull, cfg.Waiting)
		}
		return Batch{}, err
	}
	s.fillBatches()
	return s.Batch(ctx, b.ID)
}

// Batch returns a batch, or a *BatchNotFoundError.
func (s *Service) Batch(ctx context.Context, id string) (Batch, error) {
	if s.store == nil || !batchID.MatchString(id) {
		return Batch{}, &BatchNotFoundError{ID: id}
	}
	b, err := s.store.Batch(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !core.Visible(ctx, b.Owner)) {
		return Batch{}, &BatchNotFoundError{ID: id}
	}
	if err != nil {
		return Batch{}, err
	}
	return toBatch(b), nil
}

// Batches lists a page of batches, newest first, after the batch with id after, and reports
// whether more follow.
func (s *Service) Batches(ctx context.Context, after string, limit int) ([]Batch, bool, error) {
	if s.store == nil {
		return []Batch{}, false, nil
	}
	limit = max(1, limit)
	bs, err := s.store.BatchesOf(ctx, core.VisibleOwners(ctx), after, limit+1)
	if err != nil {
		return nil, false, err
	}
	out := make([]Batch, 0, min(len(bs), limit))
	for _, b := range bs[:min(len(bs), limit)] {
		out = append(out, toBatch(b))
	}
	return out, len(bs) > limit, nil
}

// CancelBatch stops a batch: one still waiting is cancelled at once; a running one becomes
// cancelling, lets the lines it is running finish, starts no more, and ends cancelled with
// the results it has. Cancelling a cancelling batch changes nothing; an ended batch is
// ErrBatchFinished.
func (s *Service) CancelBatch(ctx context.Context, id string) (Batch, error) {
	if _, err := s.Batch(ctx, id); err != nil {
		return Batch{}, err
	}
	r := &s.runner
	r.mu.Lock()
	rb := r.running[id]
	b, changed, err := s.store.CancelBatch(ctx, id, rb == nil, time.Now())
	r.mu.Unlock()
	if err != nil {
		return Batch{}, err
	}
	if !changed && b.Status != store.BatchCancelling {
		return Batch{}, fmt.Errorf("%w: batch %s is %s and cannot be cancelled", ErrBatchFinished, id, b.Status)
	}
	if rb != nil {
		rb.stop()
	}
	return toBatch(b), nil
}
