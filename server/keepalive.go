package server

import (
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/server/core"
)

// KeepaliveHeader marks a reply whose body --nonstream-keepalive pads with spaces.
const KeepaliveHeader = "X-Superfluid-Keepalive"

// keepalive is --nonstream-keepalive: a non-streaming generation commits 200 OK when the core
// admits it (core.WithAdmitted), with x-superfluid-keepalive: whitespace, and a space is
// written at once and then every interval until the JSON body, so a proxy that drops idle
// connections does not drop a long model load or prefill. Leading whitespace is valid JSON.
//
// Errors found before admission (a bad body, an unknown model, a full queue) keep their own
// status. An error after it cannot change the status any more: it arrives as the dialect's
// error JSON after the spaces, with status 200 (the request record keeps the real status).
// Headers a handler sets after the commit (x-superfluid-warm) are not sent.
func keepalive(every time.Duration) gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.Method != http.MethodPost {
			c.Next()
			return
		}
		w := &paddedWriter{ResponseWriter: c.Writer, every: every}
		c.Writer = w
		c.Request = c.Request.WithContext(core.WithAdmitted(c.Request.Context(), w.commit))
		defer w.stop() // deferred: a handler that panics after the commit must stop the ticker too
		c.Next()
	}
}

// paddedWriter is the response writer of a request that may be padded: until commit it passes
// everything through; after it, the status is sent (200) and spaces follow until the handler
// writes its body, which ends the padding.
type paddedWriter struct {
	gin.ResponseWriter
	every time.Duration

	mu        sync.Mutex
	committed bool          // 200 and the first space are sent
	body      bool          // the handler began its body: no more spaces
	stopped   bool          // the handler returned (or panicked): no commit, no more spaces
	done      chan struct{} // closed to stop the ticker
	ticker    sync.WaitGroup
}

// commit sends the status and the first space, and starts the ticker; once only, and not after
// the handler wrote anything itself.
func (w *paddedWriter) commit() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.committed || w.body || w.stopped || w.ResponseWriter.Written() {
		return
	}
	w.committed = true
	h := w.ResponseWriter.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set(KeepaliveHeader, "whitespace")
	w.ResponseWriter.WriteHeader(http.StatusOK)
	w.pad()
	w.done = make(chan struct{})
	w.ticker.Add(1)
	go w.tick(w.done)
}

func (w *paddedWriter) tick(done <-chan struct{}) {
	defer w.ticker.Done()
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		w.mu.Lock()
		if !w.body && !w.stopped {
			w.pad()
		}
		w.mu.Unlock()
	}
}

// pad writes one space and flushes it; w.mu is held. A failed write (the client is gone) is
// noticed by the generation through the request's context.
func (w *paddedWriter) pad() {
	if _, err := w.ResponseWriter.Write([]byte{' '}); err == nil {
		w.ResponseWriter.Flush()
	}
}

// stop ends the padding and waits for the ticker. It leaves body alone: after a panic the
// recovery, which runs later, must still see the reply unwritten and send its error.
func (w *paddedWriter) stop() {
	w.mu.Lock()
	w.stopped = true
	if w.done != nil {
		close(w.done)
		w.done = nil
	}
	w.mu.Unlock()
	w.ticker.Wait()
}

// startBody ends the padding before the handler's first byte.
func (w *paddedWriter) startBody() {
	w.mu.Lock()
	w.body = true
	w.mu.Unlock()
}

// WriteHeader passes the status through before the commit and drops it after.
func (w *paddedWriter) WriteHeader(code int) {
	w.mu.Lock()
	committed := w.committed
	w.mu.Unlock()
	if !committed {
		w.ResponseWriter.WriteHeader(code)
	}
}

// WriteHeaderNow: see WriteHeader.
func (w *paddedWriter) WriteHeaderNow() {
	w.mu.Lock()
	committed := w.committed
	w.mu.Unlock()
	if !committed {
		w.ResponseWriter.WriteHeaderNow()
	}
}

func (w *paddedWriter) Write(b []byte) (int, error) {
	w.startBody()
	return w.ResponseWriter.Write(b)
}

func (w *paddedWriter) WriteString(s string) (int, error) {
	w.startBody()
	return w.ResponseWriter.WriteString(s)
}

// Unwrap is the writer below: http.ResponseController reaches the connection through it, so a
// stream's write deadline (sse.WriteFrame) still holds with the padding on.
func (w *paddedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Written reports whether the handler wrote its reply: the padding alone does not count, so a
// handler that fails after the commit still renders its error (as the body).
func (w *paddedWriter) Written() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.committed && !w.body {
		return false
	}
	return w.ResponseWriter.Written()
}
