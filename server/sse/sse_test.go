package sse_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/superfluid/superfluid/server/sse"
)

// writer is a ResponseWriter safe to inspect while the stream's keep-alive goroutine writes.
type writer struct {
	mu      sync.Mutex
	header  http.Header
	status  int
	body    strings.Builder
	writes  int
	flushes int
	fail    error         // returned by Write when set
	wrote   chan struct{} // signalled (without blocking) on every write
}

func newWriter() *writer {
	return &writer{header: http.Header{}, wrote: make(chan struct{}, 1)}
}

func (w *writer) Header() http.Header { return w.header }

func (w *writer) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status != 0 {
		panic(fmt.Sprintf("WriteHeader(%d) after WriteHeader(%d)", code, w.status))
	}
	w.status = code
}

func (w *writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status == 0 {
		panic("Write before WriteHeader: the stream must commit its headers first")
	}
	if w.fail != nil {
		return 0, w.fail
	}
	w.writes++
	w.body.Write(p)
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (w *writer) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushes++
}

func (w *writer) snapshot() (status int, body string, writes, flushes int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status, w.body.String(), w.writes, w.flushes
}

// waitWrite waits for the next write (or fails the test after a generous deadline).
func (w *writer) waitWrite(t *testing.T) {
	t.Helper()
	select {
	case <-w.wrote:
	case <-time.After(10 * time.Second):
		t.Fatal("no write arrived")
	}
}

func TestFraming(t *testing.T) {
	tests := []struct {
		name  string
		write func(*sse.Stream) error
		want  string
	}{
		{"data", func(s *sse.Stream) error { return s.Data(map[string]int{"a": 1}) }, "data: {\"a\":1}\n\n"},
		{"data string escapes newlines", func(s *sse.Stream) error { return s.Data("two\nlines") }, "data: \"two\\nlines\"\n\n"},
		{"done", (*sse.Stream).Done, "data: [DONE]\n\n"},
		{"event", func(s *sse.Stream) error { return s.Event("message_start", map[string]string{"type": "x"}) },
			"event: message_start\ndata: {\"type\":\"x\"}\n\n"},
		{"data then done", func(s *sse.Stream) error {
			if err := s.Data([]int{1}); err != nil {
				return err
			}
			return s.Done()
		}, "data: [1]\n\ndata: [DONE]\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			s := sse.New(rec, 0, 0)
			if err := tt.write(s); err != nil {
				t.Fatal(err)
			}
			s.Close()
			if rec.Code != http.StatusOK || rec.Body.String() != tt.want || !rec.Flushed {
				t.Errorf("%d %q flushed=%v, want 200 %q flushed", rec.Code, rec.Body.String(), rec.Flushed, tt.want)
			}
			for k, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
				if got := rec.Header().Get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

func TestEveryFrameFlushed(t *testing.T) {
	w := newWriter()
	s := sse.New(w, 0, 0)
	defer s.Close()
	for i := range 3 {
		if err := s.Data(i); err != nil {
			t.Fatal(err)
		}
		if _, _, writes, flushes := w.snapshot(); writes != i+1 || flushes != i+1 {
			t.Fatalf("after frame %d: %d writes, %d flushes", i, writes, flushes)
		}
	}
}

func TestSetHeader(t *testing.T) {
	rec := httptest.NewRecorder()
	s := sse.New(rec, 0, 0)
	defer s.Close()
	if s.Committed() {
		t.Fatal("committed before anything was written")
	}
	if !s.SetHeader("X-Before", "1") {
		t.Error("SetHeader before commit reported false")
	}
	if rec.Code != http.StatusOK || rec.Body.Len() != 0 {
		t.Fatal("SetHeader wrote something")
	}
	s.Commit()
	s.Commit() // idempotent: a second WriteHeader would be a superfluous-call warning
	if !s.Committed() {
		t.Fatal("not committed after Commit")
	}
	if s.SetHeader("X-After", "1") {
		t.Error("SetHeader after commit reported true")
	}
	res := rec.Result()
	if res.Header.Get("X-Before") != "1" || res.Header.Get("X-After") != "" {
		t.Errorf("headers sent %v", res.Header)
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("commit sent %d %v", res.StatusCode, res.Header)
	}
}

func TestMarshalErrorWritesNothing(t *testing.T) {
	rec := httptest.NewRecorder()
	s := sse.New(rec, 0, 0)
	defer s.Close()
	if err := s.Data(make(chan int)); err == nil {
		t.Fatal("Data of a channel succeeded")
	}
	if err := s.Event("x", func() {}); err == nil {
		t.Fatal("Event of a func succeeded")
	}
	if s.Committed() || rec.Body.Len() != 0 {
		t.Error("a value that cannot be encoded committed or wrote the stream")
	}
	// The stream is still usable, and the error page can still be chosen.
	if !s.SetHeader("X-Still", "yes") {
		t.Error("SetHeader refused after a marshal error")
	}
}

func TestKeepAliveCommits(t *testing.T) {
	w := newWriter()
	s := sse.New(w, time.Millisecond, 0)
	defer s.Close()
	w.waitWrite(t)
	if !s.Committed() {
		t.Error("a keep-alive was written but the stream is not committed")
	}
	status, body, _, flushes := w.snapshot()
	if status != http.StatusOK || w.Header().Get("Content-Type") != "text/event-stream" {
		t.Errorf("keep-alive committed %d %v", status, w.Header())
	}
	if !strings.HasPrefix(body, ": keep-alive\n\n") || flushes == 0 {
		t.Errorf("body %q, %d flushes", body, flushes)
	}
	if s.SetHeader("X-Late", "1") {
		t.Error("SetHeader after a keep-alive commit reported true")
	}
}

func TestNoKeepAliveWhenDisabled(t *testing.T) {
	w := newWriter()
	s := sse.New(w, 0, 0)
	defer s.Close()
	select {
	case <-w.wrote:
		t.Fatal("a keep-alive was written with keep-alives disabled")
	case <-time.After(20 * time.Millisecond):
	}
	if s.Committed() {
		t.Error("committed with nothing written")
	}
}

func TestNoWritesAfterClose(t *testing.T) {
	w := newWriter()
	s := sse.New(w, time.Millisecond, 0)
	w.waitWrite(t) // the keep-alive goroutine is running
	if err := s.Data("last"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s.Close() // idempotent
	_, before, writes, _ := w.snapshot()
	for name, write := range map[string]func() error{
		"Data":  func() error { return s.Data("late") },
		"Done":  s.Done,
		"Event": func() error { return s.Event("late", 1) },
	} {
		if err := write(); err == nil {
			t.Errorf("%s after Close reported success", name)
		}
	}
	// Keep-alives have stopped too: nothing arrives over many intervals.
	time.Sleep(20 * time.Millisecond)
	if _, after, n, _ := w.snapshot(); n != writes || after != before {
		t.Errorf("%d writes after Close: %q", n-writes, strings.TrimPrefix(after, before))
	}
}

func TestWriteErrorSticks(t *testing.T) {
	w := newWriter()
	s := sse.New(w, time.Millisecond, 0)
	defer s.Close()
	if err := s.Data(1); err != nil {
		t.Fatal(err)
	}
	broken := errors.New("broken pipe")
	w.mu.Lock()
	w.fail = broken
	w.mu.Unlock()
	if err := s.Data(2); !errors.Is(err, broken) {
		t.Fatalf("Data on a broken writer: %v", err)
	}
	// Later writes report the first error without touching the writer again.
	w.mu.Lock()
	w.fail = nil
	w.mu.Unlock()
	if err := s.Done(); !errors.Is(err, broken) {
		t.Errorf("Done after a write error: %v", err)
	}
	time.Sleep(10 * time.Millisecond) // many keep-alive intervals
	if _, body, _, _ := w.snapshot(); body != "data: 1\n\n" {
		t.Errorf("written after the error: %q", body)
	}
}

// Data from several goroutines and keep-alives at once: every frame arrives whole. Run with -race.
func TestConcurrentFrames(t *testing.T) {
	w := newWriter()
	s := sse.New(w, 50*time.Microsecond, 0)
	const writers, frames = 8, 200
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range frames {
				if err := s.Data(map[string]int{"g": g, "i": i}); err != nil {
					t.Error(err)
					return
				}
				if i%50 == 0 {
					s.SetHeader("X-Ignored", "1")
					_ = s.Committed()
				}
			}
		}()
	}
	wg.Wait()
	// Give the keep-alive goroutine a chance to interleave if it has not yet.
	for _, _, n, _ := w.snapshot(); n <= writers*frames; _, _, n, _ = w.snapshot() {
		select {
		case <-w.wrote:
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
	s.Close()
	_, body, _, _ := w.snapshot()
	seen := map[string]bool{}
	keepAlives := 0
	for _, frame := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		switch {
		case frame == ": keep-alive":
			keepAlives++
		case strings.HasPrefix(frame, `data: {"g":`) && strings.HasSuffix(frame, "}") && !strings.Contains(frame, "\n"):
			if seen[frame] {
				t.Errorf("frame %q twice", frame)
			}
			seen[frame] = true
		default:
			t.Fatalf("torn frame %q", frame)
		}
	}
	if len(seen) != writers*frames || keepAlives == 0 {
		t.Errorf("%d data frames (want %d), %d keep-alives", len(seen), writers*frames, keepAlives)
	}
}

// TestSettle: after Settle no keep-alive commits the stream, so an uncommitted handler can
// still answer with an ordinary error status; Done silences keep-alives too.
func TestSettle(t *testing.T) {
	rec := httptest.NewRecorder()
	s := sse.New(rec, time.Millisecond, 0)
	if s.Settle() {
		t.Fatal("settled stream reports committed before anything was written")
	}
	time.Sleep(20 * time.Millisecond) // keep-alive ticks that must stay silent
	if s.Committed() {
		t.Fatal("a keep-alive committed a settled stream")
	}
	s.Close()
	if rec.Body.Len() != 0 {
		t.Fatalf("settled stream wrote %q", rec.Body.String())
	}

	rec = httptest.NewRecorder()
	s = sse.New(rec, time.Millisecond, 0)
	if err := s.Done(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	s.Close()
	if got := rec.Body.String(); got != "data: [DONE]\n\n" {
		t.Fatalf("after Done: %q", got)
	}
}

// TestKeepAliveOnlyInSilence: frames flowing faster than the interval need no keep-alives;
// a silence gets them.
func TestKeepAliveOnlyInSilence(t *testing.T) {
	rec := httptest.NewRecorder()
	s := sse.New(rec, 200*time.Millisecond, 0)
	for range 60 { // 300 ms of frames, one every 5 ms
		if err := s.Data(map[string]int{"n": 1}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.Settle()
	s.Close()
	if strings.Contains(rec.Body.String(), ": keep-alive") {
		t.Fatal("keep-alive sent while data was flowing")
	}

	for attempt := 0; ; attempt++ {
		rec := httptest.NewRecorder()
		s := sse.New(rec, 10*time.Millisecond, 0)
		_ = s.Data(map[string]int{"n": 1})
		time.Sleep(50 * time.Millisecond)
		s.Settle() // no keep-alive writes after this, so the body can be read
		got := rec.Body.String()
		s.Close()
		if strings.Contains(got, ": keep-alive") {
			return
		}
		if attempt == 50 {
			t.Fatalf("no keep-alive in a silence: %q", got)
		}
	}
}

// deadlineWriter records the write deadlines set through http.ResponseController and fails
// flushes with flushErr, as net/http's response does once the connection broke.
type deadlineWriter struct {
	*writer
	deadlines []time.Time
	flushErr  error
}

func (w *deadlineWriter) SetWriteDeadline(t time.Time) error {
	w.deadlines = append(w.deadlines, t)
	return nil
}

func (w *deadlineWriter) FlushError() error { return w.flushErr }

// wrapper is a middleware's writer (gin's): a Flush that cannot fail, and Unwrap.
type wrapper struct{ http.ResponseWriter }

func (w wrapper) Flush()                      {}
func (w wrapper) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestWriteDeadline: every frame gets a fresh deadline of the write timeout before it is
// written, through wrapping writers too; a failed flush fails the frame and every write after
// it.
func TestWriteDeadline(t *testing.T) {
	const timeout = time.Hour
	dw := &deadlineWriter{writer: newWriter()}
	s := sse.New(wrapper{dw}, 0, timeout)
	defer s.Close()
	for i := range 3 {
		before := time.Now()
		if err := s.Data(i); err != nil {
			t.Fatal(err)
		}
		after := time.Now()
		if len(dw.deadlines) != i+1 {
			t.Fatalf("%d deadlines set for %d frames", len(dw.deadlines), i+1)
		}
		if d := dw.deadlines[i]; d.Before(before.Add(timeout)) || d.After(after.Add(timeout)) {
			t.Fatalf("frame %d: deadline %v, want the write timeout from the write (%v)", i, d, before.Add(timeout))
		}
	}
	gone := errors.New("i/o timeout")
	dw.flushErr = gone
	if err := s.Data("lost"); !errors.Is(err, gone) {
		t.Fatalf("Data with a failing flush: %v, want %v", err, gone)
	}
	if err := s.Done(); !errors.Is(err, gone) {
		t.Fatalf("Done after a failed flush: %v", err)
	}

	// No timeout: no deadline is set.
	dw = &deadlineWriter{writer: newWriter()}
	s = sse.New(dw, 0, 0)
	defer s.Close()
	if err := s.Data(1); err != nil || len(dw.deadlines) != 0 {
		t.Fatalf("without a timeout: err %v, deadlines %v", err, dw.deadlines)
	}
}

// TestWriteFrameWithoutDeadlineSupport: a writer that cannot take deadlines (a recorder)
// still gets its frames.
func TestWriteFrameWithoutDeadlineSupport(t *testing.T) {
	rec := httptest.NewRecorder()
	rec.WriteHeader(http.StatusOK)
	if err := sse.WriteFrame(rec, time.Second, []byte("line\n")); err != nil {
		t.Fatal(err)
	}
	if rec.Body.String() != "line\n" || !rec.Flushed {
		t.Fatalf("body %q flushed %v", rec.Body.String(), rec.Flushed)
	}
}
