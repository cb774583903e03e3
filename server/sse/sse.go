// Package sse writes Server-Sent Events for the streaming dialects: data frames, comment
// keep-alives while the model is busy, and headers committed late so that errors found before
// the first token can still get a proper status code. Every frame must reach the connection
// within a write timeout, so a client that stops reading is dropped instead of holding its
// lane; WriteFrame gives Ollama's NDJSON lines the same bound.
package sse

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// Stream is one SSE response. Its methods are safe for concurrent use (the keep-alive timer
// writes from its own goroutine).
type Stream struct {
	w       http.ResponseWriter
	timeout time.Duration

	mu        sync.Mutex
	committed bool
	closed    bool
	// settled stops keep-alives: the stream is about to end (Settle, Done).
	settled bool
	// lastWrite is when the last frame went out; keep-alives fill only silences.
	lastWrite time.Time
	err       error
	stop      chan struct{}
}

// New prepares a stream on w; nothing is written until Commit, Data or a keep-alive.
// Keep-alive comments go out every interval (0 disables) while no data flows; the first one
// commits the headers, so a long queue or prefill never leaves the client with silence.
// Each frame must be written and flushed within writeTimeout (0: no bound); a frame that is
// not fails, and so does every write after it.
func New(w http.ResponseWriter, interval, writeTimeout time.Duration) *Stream {
	s := &Stream{w: w, timeout: writeTimeout, stop: make(chan struct{})}
	if interval > 0 {
		go s.keepAlive(interval)
	}
	return s
}

// Committed reports whether the status line and headers have been sent.
func (s *Stream) Committed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.committed
}

// Settle ends the keep-alives and reports whether the headers went out. A handler calls it
// when it is about to finish with an error: committed, the error must travel as a final frame;
// not committed, it can still be an ordinary error response with its own status. Checking and
// silencing in one step keeps a keep-alive from committing the stream in between.
func (s *Stream) Settle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settled = true
	return s.committed
}

// SetHeader sets a response header if the headers are not yet sent, and reports whether it did.
func (s *Stream) SetHeader(key, value string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.committed {
		return false
	}
	s.w.Header().Set(key, value)
	return true
}

// Commit sends the 200 status and SSE headers if not yet sent.
func (s *Stream) Commit() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commitLocked()
}

func (s *Stream) commitLocked() {
	if s.committed {
		return
	}
	s.committed = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
}

// Data writes one `data: <json>` frame and flushes it.
func (s *Stream) Data(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.write("data: " + string(b) + "\n\n")
}

// Done writes the OpenAI terminator `data: [DONE]`; no keep-alive follows it.
func (s *Stream) Done() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settled = true
	return s.writeLocked("data: [DONE]\n\n")
}

// Event writes a named event (Anthropic and Responses style).
func (s *Stream) Event(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.write("event: " + name + "\ndata: " + string(b) + "\n\n")
}

// Close stops the keep-alives; the stream writes nothing after it.
func (s *Stream) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.stop)
	}
}

func (s *Stream) write(frame string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeLocked(frame)
}

// errClosed is what a write after Close returns.
var errClosed = errors.New("sse: write after Close")

func (s *Stream) writeLocked(frame string) error {
	if s.err != nil {
		return s.err
	}
	if s.closed {
		return errClosed
	}
	s.commitLocked()
	s.lastWrite = time.Now()
	if err := WriteFrame(s.w, s.timeout, []byte(frame)); err != nil {
		s.err = err
		return err
	}
	return nil
}

// WriteFrame writes one frame of a streamed reply and flushes it to the connection, giving up
// when that takes longer than timeout (0: no bound): a client that stops reading fills its
// socket buffers, and without a deadline the write would block its handler forever. The
// deadline stays set after the frame, so it also bounds the end of the reply net/http writes
// after the handler returns; net/http clears it before the connection's next request. A write
// that times out breaks the connection, and net/http cancels the request's context.
func WriteFrame(w http.ResponseWriter, timeout time.Duration, frame []byte) error {
	if timeout > 0 {
		err := http.NewResponseController(w).SetWriteDeadline(time.Now().Add(timeout))
		switch {
		case errors.Is(err, http.ErrNotSupported):
			// A writer in the chain hides the connection (a wrapper without Unwrap): the frame
			// still goes out, but a stalled client would hold the handler, so say so.
			unboundedOnce.Do(func() {
				slog.Error("streamed replies have no write deadline: the response writer hides the connection; clients that stop reading are not dropped",
					"writer", fmt.Sprintf("%T", w))
			})
		case err != nil:
			return fmt.Errorf("set write deadline: %w", err)
		}
	}
	if _, err := w.Write(frame); err != nil {
		return fmt.Errorf("write to client: %w", err)
	}
	if err := flush(w); err != nil {
		return fmt.Errorf("write to client: %w", err)
	}
	return nil
}

// unboundedOnce logs a writer that cannot take a write deadline once per process.
var unboundedOnce sync.Once

// flush sends what w buffered and returns the error of that write. http.ResponseController's
// Flush stops at the first writer with a Flush method that cannot fail (gin's), losing the
// error, so this looks through wrappers for FlushError first.
func flush(w http.ResponseWriter) error {
	for {
		switch f := w.(type) {
		case interface{ FlushError() error }:
			return f.FlushError()
		case interface{ Unwrap() http.ResponseWriter }:
			w = f.Unwrap()
		case http.Flusher:
			f.Flush()
			return nil
		default:
			return nil
		}
	}
}

func (s *Stream) keepAlive(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.mu.Lock()
			err := s.err
			quiet := time.Since(s.lastWrite) >= interval // data frames keep the connection alive too
			if !s.closed && !s.settled && err == nil && quiet {
				err = s.writeLocked(": keep-alive\n\n")
			}
			s.mu.Unlock()
			if err != nil {
				return
			}
		case <-s.stop:
			return
		}
	}
}
