package supervise

import (
	"bytes"
	"fmt"
	"os"
	"sync"
)

// logFile is the supervised server's combined stdout and stderr on disk, kept across restarts:
// when the file passes maxBytes it becomes path+".1" (replacing the older one) and a new file
// starts, so the log never takes more than about twice maxBytes. It also keeps the last lines in
// memory, for the error a failed start reports.
type logFile struct {
	mu       sync.Mutex
	path     string
	maxBytes int64
	f        *os.File
	size     int64
	tail     []string // ring of the last lines, oldest at next
	next     int
	full     bool
	partial  []byte // the current line, until its newline arrives
}

// maxLineBytes caps one kept line: a server printing a megabyte without a newline must not
// grow the tail without bound.
const maxLineBytes = 2048

func openLogFile(path string, maxBytes int64, tailLines int) (*logFile, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the server log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open the server log: %w", err)
	}
	if tailLines < 1 {
		tailLines = 1
	}
	return &logFile{path: path, maxBytes: maxBytes, f: f, size: st.Size(), tail: make([]string, tailLines)}, nil
}

// Write appends to the file (rotating first when it is full) and feeds the tail. A failing disk
// never fails the server: the bytes still reach the tail.
func (l *logFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		if l.maxBytes > 0 && l.size > 0 && l.size+int64(len(p)) > l.maxBytes {
			l.rotate()
		}
		if l.f != nil {
			n, _ := l.f.Write(p)
			l.size += int64(n)
		}
	}
	l.feedTail(p)
	return len(p), nil
}

// rotate keeps one older file; the lock is held.
func (l *logFile) rotate() {
	l.f.Close()
	os.Rename(l.path, l.path+".1")
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		l.f = nil
		return
	}
	l.f, l.size = f, 0
}

func (l *logFile) feedTail(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.partial = appendCapped(l.partial, p)
			return
		}
		l.partial = appendCapped(l.partial, p[:i])
		l.pushLine(string(bytes.TrimRight(l.partial, "\r")))
		l.partial = l.partial[:0]
		p = p[i+1:]
	}
}

func appendCapped(dst, p []byte) []byte {
	if room := maxLineBytes - len(dst); room < len(p) {
		p = p[:max(room, 0)]
	}
	return append(dst, p...)
}

func (l *logFile) pushLine(s string) {
	l.tail[l.next] = s
	l.next = (l.next + 1) % len(l.tail)
	if l.next == 0 {
		l.full = true
	}
}

// Tail returns the last lines written, oldest first, an unfinished last line included.
func (l *logFile) Tail() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	if l.full {
		out = append(out, l.tail[l.next:]...)
	}
	out = append(out, l.tail[:l.next]...)
	if len(l.partial) > 0 {
		out = append(out, string(l.partial))
	}
	if len(out) > len(l.tail) {
		out = out[len(out)-len(l.tail):]
	}
	return out
}

// Printf writes one line of the supervisor's own (start, exit, restart), marked so it is not
// mistaken for the server's output.
func (l *logFile) Printf(format string, args ...any) {
	l.Write([]byte("[supervise] " + fmt.Sprintf(format, args...) + "\n"))
}

func (l *logFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
