package runlog

import (
	"bytes"
	"io"
	"log/slog"
	"sync"
)

// Writer returns an io.Writer for a process's stderr (a worker's llama.cpp log): what is
// written goes to next unchanged (nil: nowhere), and each complete line becomes a Line of
// level INFO with the given attributes (e.g. source=worker). Writes may come from several
// processes; a line is taken as it arrives, so two processes writing half lines at once can
// mix them (exec's copy hands over whole reads, which llama.cpp's log fills with whole lines).
func (l *Log) Writer(next io.Writer, attrs ...slog.Attr) io.Writer {
	m := map[string]any{}
	for _, a := range attrs {
		flatten(m, "", a)
	}
	return &lineWriter{log: l, next: next, attrs: m}
}

type lineWriter struct {
	log   *Log
	next  io.Writer
	attrs map[string]any

	mu      sync.Mutex
	partial []byte // the unfinished last line
}

func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	var err error
	if w.next != nil {
		n, err = w.next.Write(p)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.add(w.partial[:i])
		w.partial = w.partial[i+1:]
	}
	// A line longer than the cap is taken in pieces, so the buffer stays bounded.
	for len(w.partial) > w.log.cfg.MaxLineBytes {
		w.add(w.partial[:w.log.cfg.MaxLineBytes])
		w.partial = w.partial[w.log.cfg.MaxLineBytes:]
	}
	w.partial = append([]byte(nil), w.partial...) // drop the consumed prefix's backing array
	return n, err
}

func (w *lineWriter) add(line []byte) {
	line = bytes.TrimRight(line, "\r")
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	attrs := make(map[string]any, len(w.attrs))
	for k, v := range w.attrs {
		attrs[k] = v
	}
	w.log.Add(Line{At: w.log.cfg.Now().UTC(), Level: slog.LevelInfo.String(), Message: string(line), Attrs: attrs})
}
