package store

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// RequestSink stores request records. *Store is one: RecordRequests inserts a batch in one
// transaction. The background writer inserts through a RequestSink; Options.WrapRecordSink puts
// another one (a slow or failing fake, in tests) in front of the Store.
type RequestSink interface {
	RecordRequests(ctx context.Context, rs []RequestRecord) error
}

// Record queues r for the background writer and reports whether it was queued. It never waits
// for the database, so a reply never waits for a disk: when the queue is full (the disk is slower
// than the requests, or hung) or the store is closed, the record is dropped, counted in
// DroppedRecords and logged. A zero CreatedAt is set to the current time here, not when the
// record is written.
func (s *Store) Record(r RequestRecord) bool {
	if r.CreatedAt.IsZero() {
		r.CreatedAt = time.Now()
	}
	return s.rec.record(r)
}

// Flush waits until the records queued before it are written (or their failure logged), or ctx
// ends. Tests use it to read a record right after the reply that made it.
func (s *Store) Flush(ctx context.Context) error {
	return s.rec.flush(ctx)
}

// DroppedRecords counts the request records Record dropped since Open.
func (s *Store) DroppedRecords() uint64 {
	return s.rec.dropped.Load()
}

// recorder is the background writer of request records: a bounded queue and one goroutine that
// inserts what is queued in batches, one transaction each.
type recorder struct {
	sink  RequestSink
	batch int // most records in one transaction

	// mu guards closed, so that no record is sent on the closed queue: record holds it for
	// reading around its send, close for writing around close(queue).
	mu     sync.RWMutex
	closed bool
	queue  chan RequestRecord

	flushes chan chan struct{} // Flush asks; the writer closes the channel it sent when done
	done    chan struct{}      // closed when the writer has drained the closed queue

	dropped atomic.Uint64
}

func newRecorder(sink RequestSink, queue, batch int) *recorder {
	r := &recorder{
		sink: sink, batch: batch, queue: make(chan RequestRecord, queue),
		flushes: make(chan chan struct{}), done: make(chan struct{}),
	}
	go r.run()
	return r
}

// record queues rec without waiting and reports whether it did. A dropped record is logged the
// first time and then at every power of two, so that a stalled disk under load does not flood
// the log.
func (r *recorder) record(rec RequestRecord) bool {
	r.mu.RLock()
	closed, queued := r.closed, false
	if !closed {
		select {
		case r.queue <- rec:
			queued = true
		default: // full: drop rather than make the reply wait
		}
	}
	r.mu.RUnlock()
	if queued {
		return true
	}
	n := r.dropped.Add(1)
	if n&(n-1) == 0 {
		reason := "the queue is full: the database is slower than the requests"
		if closed {
			reason = "the database is closed"
		}
		slog.Warn("request record dropped", "id", rec.ID, "reason", reason, "dropped", n)
	}
	return false
}

// run is the writer: it takes one record, whatever else is queued up to a batch, and inserts
// them in one transaction; it returns when the queue is closed and empty.
func (r *recorder) run() {
	defer close(r.done)
	buf := make([]RequestRecord, 0, r.batch)
	for {
		select {
		case rec, ok := <-r.queue:
			if !ok {
				return
			}
			buf, _ = r.take(append(buf[:0], rec), r.batch-1)
			r.write(buf)
		case ack := <-r.flushes:
			// Whatever was queued before Flush is in the queue now (or written already).
			// Write that many and no more, so a steady stream of new records cannot hold
			// Flush forever.
			for n := len(r.queue); n > 0; {
				var got int
				buf, got = r.take(buf[:0], min(n, r.batch))
				if got == 0 {
					break
				}
				r.write(buf)
				n -= got
			}
			close(ack)
		}
	}
}

// take appends up to n queued records to buf without waiting and says how many it took.
func (r *recorder) take(buf []RequestRecord, n int) ([]RequestRecord, int) {
	got := 0
	for got < n {
		select {
		case rec, ok := <-r.queue:
			if !ok {
				return buf, got
			}
			buf = append(buf, rec)
			got++
		default:
			return buf, got
		}
	}
	return buf, got
}

func (r *recorder) write(rs []RequestRecord) {
	if err := r.sink.RecordRequests(context.Background(), rs); err != nil {
		slog.Error("request records not stored", "records", len(rs), "err", err)
	}
}

func (r *recorder) flush(ctx context.Context) error {
	ack := make(chan struct{})
	select {
	case r.flushes <- ack:
	case <-r.done: // closed and drained: nothing is queued
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ack:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close stops taking records and waits until the writer has written every queued one.
func (r *recorder) close() {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.queue)
	}
	r.mu.Unlock()
	<-r.done
	if n := r.dropped.Load(); n > 0 {
		slog.Warn("request records were dropped", "dropped", n)
	}
}
