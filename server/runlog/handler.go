package runlog

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Handler returns a slog.Handler that records each record of the ring's level or above in l
// and passes every record to next (nil: none) when next is enabled for it.
func (l *Log) Handler(next slog.Handler) slog.Handler {
	return &teeHandler{log: l, next: next}
}

// teeHandler is Handler's handler. attrs are those added with WithAttrs, their keys already
// qualified by the groups open then; groups is the group path open now.
type teeHandler struct {
	log    *Log
	next   slog.Handler
	attrs  map[string]any
	groups []string
}

func (h *teeHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= h.log.cfg.Level || (h.next != nil && h.next.Enabled(ctx, level))
}

func (h *teeHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= h.log.cfg.Level {
		attrs := make(map[string]any, len(h.attrs)+r.NumAttrs())
		for k, v := range h.attrs {
			attrs[k] = v
		}
		prefix := groupPrefix(h.groups)
		r.Attrs(func(a slog.Attr) bool {
			flatten(attrs, prefix, a)
			return true
		})
		at := r.Time
		if at.IsZero() {
			at = h.log.cfg.Now()
		}
		h.log.Add(Line{At: at.UTC(), Level: r.Level.String(), Message: r.Message, Attrs: attrs})
	}
	if h.next != nil && h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h *teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = make(map[string]any, len(h.attrs)+len(as))
	for k, v := range h.attrs {
		c.attrs[k] = v
	}
	prefix := groupPrefix(h.groups)
	for _, a := range as {
		flatten(c.attrs, prefix, a)
	}
	if h.next != nil {
		c.next = h.next.WithAttrs(as)
	}
	return &c
}

func (h *teeHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.groups = append(append([]string(nil), h.groups...), name)
	if h.next != nil {
		c.next = h.next.WithGroup(name)
	}
	return &c
}

func groupPrefix(groups []string) string {
	if len(groups) == 0 {
		return ""
	}
	return strings.Join(groups, ".") + "."
}

// flatten adds a to m under prefix: a group's members as "group.key", values as JSON-friendly
// Go values (an error or another value as its text).
func flatten(m map[string]any, prefix string, a slog.Attr) {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, g := range v.Group() {
			flatten(m, p, g)
		}
		return
	}
	if a.Key == "" {
		return
	}
	switch v.Kind() {
	case slog.KindString:
		m[prefix+a.Key] = v.String()
	case slog.KindInt64:
		m[prefix+a.Key] = v.Int64()
	case slog.KindUint64:
		m[prefix+a.Key] = v.Uint64()
	case slog.KindFloat64:
		m[prefix+a.Key] = v.Float64()
	case slog.KindBool:
		m[prefix+a.Key] = v.Bool()
	case slog.KindDuration:
		m[prefix+a.Key] = v.Duration().String()
	case slog.KindTime:
		m[prefix+a.Key] = v.Time().UTC().Format(time.RFC3339Nano)
	default:
		m[prefix+a.Key] = fmt.Sprint(v.Any())
	}
}

// PlainHandler returns a handler that writes lines to w as slog's default logger does
// ("2006/01/02 15:04:05 INFO message key=value"), so teeing the default logger through a Log
// keeps stderr as it was. (Wrapping slog's own default handler instead would loop: once a
// handler is set as the default, the log package writes into it.)
func PlainHandler(w io.Writer) slog.Handler {
	var mu sync.Mutex
	var buf bytes.Buffer
	h := &plainHandler{out: log.New(w, "", log.LstdFlags), mu: &mu, buf: &buf}
	h.attrs = slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: dropBuiltins})
	return h
}

// plainHandler formats the attributes with a TextHandler stripped of time, level and message
// (the default handler formats them the same way) and writes the line through a log.Logger.
type plainHandler struct {
	out   *log.Logger
	attrs slog.Handler // writes into buf, under mu
	mu    *sync.Mutex
	buf   *bytes.Buffer
}

func dropBuiltins(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey) {
		return slog.Attr{}
	}
	return a
}

func (h *plainHandler) Enabled(_ context.Context, level slog.Level) bool {
	return level >= slog.LevelInfo
}

func (h *plainHandler) Handle(ctx context.Context, r slog.Record) error {
	h.mu.Lock()
	h.buf.Reset()
	err := h.attrs.Handle(ctx, r)
	rest := strings.TrimSuffix(h.buf.String(), "\n")
	h.mu.Unlock()
	if err != nil {
		return err
	}
	line := r.Level.String() + " " + r.Message
	if rest != "" {
		line += " " + rest
	}
	return h.out.Output(0, line)
}

func (h *plainHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = h.attrs.WithAttrs(as)
	return &c
}

func (h *plainHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.attrs = h.attrs.WithGroup(name)
	return &c
}
