package batches

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/superfluid/superfluid/server/store"
)

// The batch runner. Up to BatchConfig.Running batches run at once, each up to LinesAtOnce
// lines at a time; the rest wait ("validating") in the order they were created. Batches that
// were running when the server stopped resume first.
//
// Every line's result is committed in the transaction that counts it (store.SaveBatchLine), so
// a line is either done, counted and kept, or not done at all: after a crash (kill -9 included)
// the batch resumes with the lines that have no result, and no line is run twice or lost. A
// line interrupted by a shutdown is not recorded and runs again after the restart. When every
// line has its result, the output and error files are written (temporary file, sync, rename)
// and inserted with the batch's end in one transaction.

// batchRunner is the Service's runner state; its zero value is ready (stopped).
type batchRunner struct {
	mu      sync.Mutex
	lines   map[string]LineFunc      // how each url's lines run
	ctx     context.Context          // nil until StartBackground; cancelled by StopBackground
	stopAll context.CancelFunc       //
	running map[string]*runningBatch // by batch id
	wg      sync.WaitGroup           // the running batches and the expiry loop
}

// runningBatch is a batch a goroutine runs; stop asks it to start no more lines.
type runningBatch struct {
	cancel chan struct{}
	once   sync.Once
}

func (rb *runningBatch) stop() { rb.once.Do(func() { close(rb.cancel) }) }

func (rb *runningBatch) stopped() bool {
	select {
	case <-rb.cancel:
		return true
	default:
		return false
	}
}

// fileExpiryEvery is how often expired files are deleted (reads hide them at once).
const fileExpiryEvery = time.Minute

// StartBackground starts the service's background work: it sweeps what a crash left in the
// files folder, deletes expired files (then every minute), and starts the batch runner, which
// resumes the batches that were running. A service that keeps no files has none.
func (s *Service) StartBackground() error {
	if s.filesReady() != nil {
		return nil
	}
	ctx := context.Background()
	if err := s.sweepFiles(ctx); err != nil {
		return err
	}
	r := &s.runner
	r.mu.Lock()
	if r.ctx != nil {
		r.mu.Unlock()
		return errors.New("the background work is started already")
	}
	r.ctx, r.stopAll = context.WithCancel(ctx)
	r.running = map[string]*runningBatch{}
	r.wg.Add(1)
	go s.expiryLoop(r.ctx)
	r.mu.Unlock()
	s.fillBatches()
	return nil
}

// StopBackground stops the background work and waits for it, or for ctx. Lines still running
// are abandoned unrecorded: they run again when the service starts next.
func (s *Service) StopBackground(ctx context.Context) error {
	r := &s.runner
	r.mu.Lock()
	if r.stopAll != nil {
		r.stopAll()
	}
	r.mu.Unlock()
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	// Stopped: StartBackground may start it again (the desktop app's Stop, then Start).
	r.mu.Lock()
	if r.ctx != nil && r.ctx.Err() != nil {
		r.ctx, r.stopAll, r.running = nil, nil, nil
	}
	r.mu.Unlock()
	return nil
}

// stopIfClosed reports whether the model manager has closed, the server's shutdown, and if so
// stops the batch runner (if StopBackground has not already): a line that failed because no
// model can load any more is not a result, it runs again after the restart, and no line or
// batch is started, retried or finished against a closed manager.
func (s *Service) stopIfClosed() bool {
	r := &s.runner
	r.mu.Lock()
	defer r.mu.Unlock()
	return s.stopIfClosedLocked()
}

func (s *Service) stopIfClosedLocked() bool {
	if !s.core.ShuttingDown() {
		return false
	}
	if r := &s.runner; r.stopAll != nil {
		r.stopAll()
	}
	return true
}

func (s *Service) expiryLoop(ctx context.Context) {
	defer s.runner.wg.Done()
	t := time.NewTicker(fileExpiryEvery)
	defer t.Stop()
	for {
		if err := s.expireFiles(ctx, time.Now()); err != nil && ctx.Err() == nil {
			slog.Error("expired files could not be deleted", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// fillBatches starts waiting batches while fewer than BatchConfig.Running run.
func (s *Service) fillBatches() {
	r := &s.runner
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx == nil || r.ctx.Err() != nil || s.stopIfClosedLocked() {
		return
	}
	cfg := s.batchConfig()
	if len(r.running) >= cfg.Running {
		return
	}
	bs, err := s.store.UnfinishedBatches(r.ctx)
	if err != nil {
		slog.Error("the batches to run could not be read", "err", err)
		return
	}
	// Batches that were running when the server stopped resume first; then the waiting ones,
	// in the order they came.
	slices.SortStableFunc(bs, func(a, b store.Batch) int {
		return cmp.Compare(boolRank(a.Status == store.BatchValidating), boolRank(b.Status == store.BatchValidating))
	})
	for _, b := range bs {
		if len(r.running) >= cfg.Running {
			break
		}
		if r.running[b.ID] != nil {
			continue
		}
		rb := &runningBatch{cancel: make(chan struct{})}
		if b.Status == store.BatchCancelling {
			rb.stop()
		}
		r.running[b.ID] = rb
		r.wg.Add(1)
		go s.runBatch(r.ctx, rb, b)
	}
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (s *Service) lineFunc(url string) LineFunc {
	s.runner.mu.Lock()
	defer s.runner.mu.Unlock()
	return s.runner.lines[url]
}

// runBatch runs one batch to its end (or to the shutdown), then lets the next one start.
func (s *Service) runBatch(ctx context.Context, rb *runningBatch, b store.Batch) {
	r := &s.runner
	defer r.wg.Done()
	defer s.fillBatches()
	defer func() {
		r.mu.Lock()
		delete(r.running, b.ID)
		r.mu.Unlock()
	}()
	if err := s.runBatchSteps(ctx, rb, b); err != nil && ctx.Err() == nil {
		slog.Error("batch failed", "batch", b.ID, "err", err)
		reason := []store.BatchError{{Code: "server_error", Message: err.Error()}}
		if err := s.store.FailBatch(context.WithoutCancel(ctx), b.ID, reason, time.Now()); err != nil {
			slog.Error("a failed batch could not be marked failed", "batch", b.ID, "err", err)
		}
	}
}

func (s *Service) runBatchSteps(ctx context.Context, rb *runningBatch, b store.Batch) error {
	owned, err := s.asOwner(ctx, b) // its lines run as the key that made it (owners.go)
	switch {
	case err == nil:
		ctx = owned
	case b.Status == store.BatchCancelling:
		return s.finishBatch(ctx, b, store.BatchCancelled) // runs no line
	case errors.Is(err, ErrOwnerNotFound):
		slog.Warn("a batch whose API key was revoked is failed instead of run", "batch", b.ID, "key", b.OwnerName)
		return s.store.FailBatch(ctx, b.ID, []store.BatchError{ownerGone(b)}, time.Now())
	default:
		return err
	}
	if b.Status == store.BatchValidating {
		total, model, reasons, err := s.validateBatch(ctx, b)
		if ctx.Err() != nil {
			return nil // it validates again after the restart
		}
		if err != nil {
			return err
		}
		now := time.Now()
		if len(reasons) > 0 {
			err = s.store.FailBatch(ctx, b.ID, reasons, now)
		} else {
			err = s.store.StartBatch(ctx, b.ID, total, model, now)
		}
		if err != nil && !errors.Is(err, store.ErrBatchNotRunning) {
			return err
		}
		// Cancelled meanwhile (cancelling now), or moved on: carry on from what it is.
		if b, err = s.store.Batch(ctx, b.ID); err != nil {
			return err
		}
	}
	switch {
	case b.Status == store.BatchCancelling:
		return s.finishBatch(ctx, b, store.BatchCancelled)
	case b.Status != store.BatchInProgress:
		return nil // failed (or ended) already
	}
	gone, err := s.runLines(ctx, rb, b)
	if err != nil || ctx.Err() != nil {
		return err
	}
	if gone {
		return s.store.FailBatch(ctx, b.ID, []store.BatchError{inputGone(b.InputFileID)}, time.Now())
	}
	status := store.BatchCompleted
	if rb.stopped() {
		status = store.BatchCancelled
	}
	return s.finishBatch(ctx, b, status)
}

func inputGone(id string) store.BatchError {
	return store.BatchError{Code: "file_not_found", Param: "input_file_id",
		Message: fmt.Sprintf("the input file %s no longer exists; upload it again and create a new batch", id)}
}

// openInput opens a batch's input file (an expired one too: a batch that started finishes).
func (s *Service) openInput(ctx context.Context, id string) (*os.File, error) {
	if !fileID.MatchString(id) {
		return nil, &FileNotFoundError{ID: id}
	}
	if _, err := s.store.File(ctx, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, &FileNotFoundError{ID: id}
		}
		return nil, err
	}
	f, err := os.Open(filepath.Join(s.cfg.Files.Dir, id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, &FileNotFoundError{ID: id}
	}
	return f, err
}

// runLines runs the lines of b that have no result yet, LinesAtOnce at a time, until they are
// all done, the batch is cancelled (the lines running finish; no more start) or ctx ends. It
// reports gone when the input file no longer exists.
func (s *Service) runLines(ctx context.Context, rb *runningBatch, b store.Batch) (gone bool, err error) {
	done, err := s.store.BatchLinesDone(ctx, b.ID)
	if err != nil {
		return false, err
	}
	in, err := s.openInput(ctx, b.InputFileID)
	if errors.Is(err, ErrFileNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer in.Close()
	// The lanes of the batch's model are shared with its other batches and with interactive
	// requests (core.Model.TakeBatchLane); a model that is gone has its lines fail one by one.
	m, _ := s.core.Model(b.Model)
	lanes := func() int {
		if m == nil {
			return 1
		}
		return max(m.Info().Parallel, 1)
	}
	most := s.batchConfig().LinesAtOnce
	if most <= 0 {
		most = lanes() + 1
	}
	slots := make(chan struct{}, most)
	var wg sync.WaitGroup
	defer wg.Wait()
	lines := newLineReader(in)
	for idx := 0; ; idx++ {
		raw, _, err := lines.next()
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if _, ok := slices.BinarySearch(done, idx); ok {
			continue
		}
		select {
		case slots <- struct{}{}:
		case <-rb.cancel:
			return false, nil
		case <-ctx.Done():
			return false, nil
		}
		if m != nil && !m.TakeBatchLane(ctx, rb.cancel) {
			<-slots
			return false, nil
		}
		if rb.stopped() || ctx.Err() != nil {
			if m != nil {
				m.GiveBatchLane()
			}
			<-slots
			return false, nil // between lines
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The lane and the slot are free once the request is done, before its result is
			// committed: the next line need not wait for the disk.
			var once sync.Once
			free := func() {
				once.Do(func() {
					if m != nil {
						m.GiveBatchLane()
					}
					<-slots
				})
			}
			defer free()
			s.runLine(ctx, b, idx, raw, free)
		}()
	}
}
