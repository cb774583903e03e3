// Package runlog keeps the server's recent log lines in memory, for the admin's runtime log: a
// bounded ring of lines (when, level, message, attributes), filled by a slog.Handler that tees
// every record into the ring and on to the next handler, and by a Writer that tees a worker
// process's stderr line by line. Followers Subscribe for live lines with a backlog; each has a
// bounded buffer, and a follower that falls behind is dropped rather than ever slowing logging.
//
// It imports nothing of the module: the app builds one Log where it builds the logger and hands
// it to the web API.
package runlog

import (
	"cmp"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Line is one log line as the runtime log serves it.
type Line struct {
	At      time.Time      `json:"at"`
	Level   string         `json:"level"`
	Message string         `json:"message"`
	Attrs   map[string]any `json:"attrs"`
}

// Text renders l as one line of text: time, level, message, then the attributes as key=value
// in key order.
func (l Line) Text() string {
	var b strings.Builder
	b.WriteString(l.At.UTC().Format(time.RFC3339Nano))
	b.WriteByte(' ')
	b.WriteString(l.Level)
	b.WriteByte(' ')
	b.WriteString(l.Message)
	keys := make([]string, 0, len(l.Attrs))
	for k := range l.Attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%s", k, quoteIfNeeded(fmt.Sprint(l.Attrs[k])))
	}
	return b.String()
}

func quoteIfNeeded(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\n\"=") {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// Config sizes a Log; the zero value is the default for each field.
type Config struct {
	// Lines is how many recent lines the ring keeps (default 5000).
	Lines int
	// FollowerBuffer is how many lines a follower may fall behind before it is dropped
	// (default 1024).
	FollowerBuffer int
	// MaxLineBytes cuts longer messages (default 16 KiB).
	MaxLineBytes int
	// Level is the lowest level the ring keeps (default Info).
	Level slog.Level
	// Now is the clock for Writer's lines (default time.Now).
	Now func() time.Time
}

// Log is the ring of recent lines and its followers. It is safe for concurrent use.
type Log struct {
	cfg Config

	mu        sync.Mutex
	ring      []Line // capacity cfg.Lines; next is where the next line goes once it is full
	next      int
	followers map[*Subscription]struct{}
}

// New makes an empty Log.
func New(cfg Config) *Log {
	cfg.Lines = cmp.Or(cfg.Lines, 5000)
	cfg.FollowerBuffer = cmp.Or(cfg.FollowerBuffer, 1024)
	cfg.MaxLineBytes = cmp.Or(cfg.MaxLineBytes, 16<<10)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Log{cfg: cfg, ring: make([]Line, 0, cfg.Lines), followers: map[*Subscription]struct{}{}}
}

// Add records one line and hands it to every follower; a follower whose buffer is full is
// dropped (its channel closed).
func (l *Log) Add(line Line) {
	if len(line.Message) > l.cfg.MaxLineBytes {
		line.Message = line.Message[:l.cfg.MaxLineBytes] + "…"
	}
	if line.Attrs == nil {
		line.Attrs = map[string]any{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ring) < cap(l.ring) {
		l.ring = append(l.ring, line)
	} else {
		l.ring[l.next] = line
		l.next = (l.next + 1) % len(l.ring)
	}
	for s := range l.followers {
		select {
		case s.c <- line:
		default:
			s.dropped = true
			l.unsubscribe(s)
		}
	}
}

// Recent returns up to n of the newest lines, oldest first (n <= 0: none).
func (l *Log) Recent(n int) []Line {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.recent(n)
}

func (l *Log) recent(n int) []Line {
	all := make([]Line, 0, len(l.ring))
	all = append(all, l.ring[l.next:]...)
	all = append(all, l.ring[:l.next]...)
	n = max(0, min(n, len(all)))
	return all[len(all)-n:]
}

// WriteText writes every line the ring holds, oldest first, one per text line.
func (l *Log) WriteText(w io.Writer) error {
	for _, line := range l.Recent(l.cfg.Lines) {
		if _, err := io.WriteString(w, line.Text()+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// Subscription is one follower of a Log: Backlog holds the recent lines it asked for, C the
// lines added after them. C is closed by Close, or when the follower fell more than its buffer
// behind (then Dropped reports true).
type Subscription struct {
	Backlog []Line
	C       <-chan Line

	log     *Log
	c       chan Line
	dropped bool // guarded by log.mu
}

// Subscribe starts following the log: the newest backlog lines (at most the ring) and, on C,
// every line added after them, none missed and none twice.
func (l *Log) Subscribe(backlog int) *Subscription {
	c := make(chan Line, l.cfg.FollowerBuffer)
	s := &Subscription{C: c, c: c, log: l}
	l.mu.Lock()
	defer l.mu.Unlock()
	s.Backlog = slices.Clone(l.recent(backlog))
	l.followers[s] = struct{}{}
	return s
}

// Close stops following; C is closed. Closing twice is fine.
func (s *Subscription) Close() {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	s.log.unsubscribe(s)
}

// Dropped reports whether the follower was dropped for falling behind.
func (s *Subscription) Dropped() bool {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	return s.dropped
}

// unsubscribe removes s and closes its channel; l.mu is held.
func (l *Log) unsubscribe(s *Subscription) {
	if _, ok := l.followers[s]; ok {
		delete(l.followers, s)
		close(s.c)
	}
}

// Followers counts the live followers (tests, and a gauge one day).
func (l *Log) Followers() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.followers)
}
