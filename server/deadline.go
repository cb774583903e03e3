package server

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
)

// DefaultReadTimeout is how long a request body may go without sending anything when the
// Config names no bound.
const DefaultReadTimeout = 30 * time.Second

// MinBodyRate is the slowest a request body may arrive on average, in bytes per second, once
// its first read timeout has passed: a client that trickles a byte before each read timeout
// would otherwise hold its connection and goroutine for as long as the body limit allows
// (32 MB at a byte every 29 s is decades). 4 KiB/s is a 2G mobile link.
const MinBodyRate = 4 << 10

// deadlines bounds the connection's I/O for every request, so that a client that stalls holds
// no handler forever:
//
//   - Each read of the request body must receive something within read: a client that sends
//     half a body and stops gets its read failed (the handler answers 400) instead of holding a
//     connection and a goroutine. The bound is per read, not for the whole body, so a large
//     upload on a slow link still arrives. Once the body ends the connection has no read
//     deadline: net/http's own background read, which notices a client hanging up during a
//     long generation, must never time out. The body as a whole must also keep up
//     MinBodyRate after its first read timeout, so that a trickle of bytes does not evade
//     the bound.
//   - Each write of the reply (a whole JSON body, a chunk of a file download, a padding space, a
//     stream's frame) must be taken within write: a client that stops reading is dropped.
//     Deadlines are set per write, never for the whole reply, which would cut long
//     generations and large downloads.
//
// read or write 0 leaves that side unbounded.
func deadlines(read, write time.Duration) gin.HandlerFunc {
	return func(c *gin.Context) {
		rc := http.NewResponseController(c.Writer)
		var body *deadlineBody
		if read > 0 && c.Request.Body != nil && c.Request.Body != http.NoBody {
			body = &deadlineBody{ReadCloser: c.Request.Body, rc: rc, timeout: read}
			// A copy of the request: net/http looks at its own request's Body (a *http.body) after
			// the handler to decide whether to drain what is left or close the connection.
			r := c.Request.WithContext(c.Request.Context())
			r.Body = body
			c.Request = r
		}
		if write > 0 {
			c.Writer = &deadlineWriter{ResponseWriter: c.Writer, rc: rc, timeout: write}
		}
		c.Next()
		if body != nil {
			body.finish()
		}
	}
}

// deadlineBody sets the connection's read deadline before each read of the body.
type deadlineBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	timeout time.Duration

	mu       sync.Mutex
	done     bool      // the body ended (or failed): no more deadlines
	start    time.Time // the first read
	received int64     // bytes read so far
	slow     bool      // the deadline in force is the average rate's, not the read timeout's
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	done := b.done
	deadline := b.deadline(time.Now())
	b.mu.Unlock()
	if done {
		return b.ReadCloser.Read(p)
	}
	if err := b.rc.SetReadDeadline(deadline); err != nil {
		unbounded("read", err)
	}
	n, err := b.ReadCloser.Read(p)
	b.mu.Lock()
	b.received += int64(n)
	slow := b.slow
	b.mu.Unlock()
	if err != nil {
		// At the body's end net/http starts its background read (and clears the deadline
		// itself); setting one again would time that read out and cancel the request.
		b.mu.Lock()
		b.done = true
		b.mu.Unlock()
		if isTimeout(err) && slow {
			return n, fmt.Errorf("the request body stalled: it arrived slower than %d bytes per second: %w", MinBodyRate, err)
		}
		if isTimeout(err) {
			return n, fmt.Errorf("the request body stalled: nothing arrived for %s: %w", b.timeout, err)
		}
	}
	return n, err
}

// deadline is the next read's: now plus the read timeout, or sooner when the body has fallen
// behind MinBodyRate since its first read (allowing one read timeout of slack); b.mu is held.
func (b *deadlineBody) deadline(now time.Time) time.Time {
	if b.start.IsZero() {
		b.start = now
	}
	d := now.Add(b.timeout)
	rate := b.start.Add(b.timeout + time.Duration(float64(b.received)/MinBodyRate*float64(time.Second)))
	b.slow = rate.Before(d)
	if b.slow {
		return rate
	}
	return d
}

// finish runs when the handler returns: a body not read to its end is drained by net/http
// (a bounded amount), and that drain gets a deadline too.
func (b *deadlineBody) finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Now().Add(b.timeout))
	}
}

// isTimeout reports whether err is a deadline's (net.Error's Timeout, os.ErrDeadlineExceeded).
func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// deadlineWriter sets the connection's write deadline before each write of the reply. Unwrap
// lets http.ResponseController (the streams' own deadlines, Flush) reach the connection.
type deadlineWriter struct {
	gin.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (w *deadlineWriter) arm() {
	if err := w.rc.SetWriteDeadline(time.Now().Add(w.timeout)); err != nil {
		unbounded("write", err)
	}
}

func (w *deadlineWriter) Write(b []byte) (int, error) {
	w.arm()
	return w.ResponseWriter.Write(b)
}

func (w *deadlineWriter) WriteString(s string) (int, error) {
	w.arm()
	return w.ResponseWriter.WriteString(s)
}

// Unwrap is the writer below, for http.ResponseController.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

var unboundedOnce sync.Map // "read"/"write" → struct{}: each logged once

// unbounded logs, once per side, that a deadline could not be set because the connection's
// writer (a wrapper without Unwrap, a test recorder) hides it: stalled clients are not
// dropped. Other errors (a closed connection) fail the read or write that follows anyway.
func unbounded(side string, err error) {
	if !errors.Is(err, http.ErrNotSupported) {
		return
	}
	if _, seen := unboundedOnce.LoadOrStore(side, struct{}{}); !seen {
		slog.Error("a "+side+" deadline could not be set: clients that stall are not dropped", "err", err)
	}
}
