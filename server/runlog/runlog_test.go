package runlog

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"
)

func messages(lines []Line) []string {
	var out []string
	for _, l := range lines {
		out = append(out, l.Message)
	}
	return out
}

func TestRingKeepsTheNewest(t *testing.T) {
	l := New(Config{Lines: 3})
	for i := range 5 {
		l.Add(Line{Message: fmt.Sprint(i)})
	}
	if got := strings.Join(messages(l.Recent(10)), ","); got != "2,3,4" {
		t.Errorf("Recent(10) = %s, want 2,3,4", got)
	}
	if got := strings.Join(messages(l.Recent(2)), ","); got != "3,4" {
		t.Errorf("Recent(2) = %s, want 3,4", got)
	}
	if got := l.Recent(0); len(got) != 0 {
		t.Errorf("Recent(0) = %v, want none", got)
	}
}

func TestHandlerTeesIntoRingAndNext(t *testing.T) {
	l := New(Config{})
	var stderr bytes.Buffer
	log := slog.New(l.Handler(PlainHandler(&stderr)))
	log.With("lane", "gpu0").WithGroup("load").Info("model loaded", "model", "m", "took", 2*time.Second, "err", errors.New("none"))
	log.Debug("too quiet") // below Info: neither the ring nor stderr

	lines := l.Recent(10)
	if len(lines) != 1 {
		t.Fatalf("ring holds %d lines, want 1: %v", len(lines), lines)
	}
	got := lines[0]
	want := map[string]any{"lane": "gpu0", "load.model": "m", "load.took": "2s", "load.err": "none"}
	if got.Level != "INFO" || got.Message != "model loaded" || fmt.Sprint(got.Attrs) != fmt.Sprint(want) {
		t.Errorf("line = %+v, want INFO model loaded %v", got, want)
	}
	if got.At.IsZero() || time.Since(got.At) > time.Minute {
		t.Errorf("line at %v, want now", got.At)
	}
	// stderr keeps slog's default format: log's timestamp, then LEVEL message key=value.
	re := regexp.MustCompile(`^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d INFO model loaded lane=gpu0 load.model=m load.took=2s load.err=none\n$`)
	if !re.MatchString(stderr.String()) {
		t.Errorf("stderr = %q, want slog's default format", stderr.String())
	}
}

func TestSubscribeBacklogThenLive(t *testing.T) {
	l := New(Config{})
	for i := range 5 {
		l.Add(Line{Message: fmt.Sprint(i)})
	}
	s := l.Subscribe(2)
	defer s.Close()
	if got := strings.Join(messages(s.Backlog), ","); got != "3,4" {
		t.Errorf("backlog = %s, want 3,4", got)
	}
	slog.New(l.Handler(nil)).Warn("live")
	select {
	case line := <-s.C:
		if line.Message != "live" || line.Level != "WARN" {
			t.Errorf("live line = %+v", line)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no live line")
	}
	s.Close()
	s.Close()
	if _, open := <-s.C; open {
		t.Error("C still open after Close")
	}
	if l.Followers() != 0 {
		t.Errorf("%d followers after Close", l.Followers())
	}
}

func TestSlowFollowerIsDropped(t *testing.T) {
	l := New(Config{FollowerBuffer: 2})
	slow := l.Subscribe(0)
	fast := l.Subscribe(0)
	defer fast.Close()
	got := 0
	for i := range 5 { // never blocks although slow reads nothing
		l.Add(Line{Message: fmt.Sprint(i)})
		<-fast.C
		got++
	}
	if !slow.Dropped() {
		t.Error("the slow follower was not dropped")
	}
	n := 0
	for range slow.C { // the buffered lines, then closed
		n++
	}
	if n != 2 {
		t.Errorf("slow follower got %d lines before the close, want its buffer (2)", n)
	}
	if fast.Dropped() || got != 5 || l.Followers() != 1 {
		t.Errorf("fast follower: dropped %v, got %d, followers %d", fast.Dropped(), got, l.Followers())
	}
}

func TestWriterSplitsLines(t *testing.T) {
	at := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	l := New(Config{MaxLineBytes: 8, Now: func() time.Time { return at }})
	var next bytes.Buffer
	w := l.Writer(&next, slog.String("source", "worker"))
	for _, p := range []string{"load", "ing\r\nok\n\n", "0123456789abc", "\n"} {
		if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	if next.String() != "loading\r\nok\n\n0123456789abc\n" {
		t.Errorf("next got %q, want the bytes unchanged", next.String())
	}
	if got := strings.Join(messages(l.Recent(10)), "|"); got != "loading|ok|01234567|89abc" {
		t.Errorf("lines = %s", got)
	}
	var text bytes.Buffer
	if err := l.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text.String(), "2026-12-01T20:00:00Z INFO loading source=worker\n") || strings.Count(text.String(), "\n") != 4 {
		t.Errorf("text = %q", text.String())
	}
}
