package llm

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// TextStream turns token pieces into text that is safe to send: whole UTF-8 characters only, and
// never any part of a stop string.
//
// It holds back only what it must: the longest suffix of the pending bytes that is a proper
// prefix of some stop string, and an incomplete UTF-8 character at the end. A generation stops
// where the first stop string completes; when several complete at the same byte, the longest
// (the one that starts first) wins. Empty stop strings are ignored. Invalid UTF-8 from the model
// is emitted as U+FFFD, one per run of bad bytes.
//
// A TextStream is not safe for concurrent use.
type TextStream struct {
	stops   [][]byte
	pending []byte // pushed but not yet emitted
	stopped bool
	matched string // the stop string that ended the stream
}

// NewTextStream returns a stream that stops at any of stops.
func NewTextStream(stops []string) *TextStream {
	t := &TextStream{}
	for _, s := range stops {
		if s != "" {
			t.stops = append(t.stops, []byte(s))
		}
	}
	return t
}

// Push adds the piece of one token. It returns the text now safe to emit (maybe ""), and
// stopped=true when a stop string completed: then out holds the text before the stop string, and
// nothing after it is ever emitted (later calls return "", true and Flush returns "").
func (t *TextStream) Push(piece []byte) (out string, stopped bool) {
	if t.stopped {
		return "", true
	}
	t.pending = append(t.pending, piece...)
	if at, stop, ok := t.firstStop(); ok {
		t.stopped, t.matched = true, stop
		out = validText(t.pending[:at])
		t.pending = t.pending[:0]
		return out, true
	}
	n := len(t.pending) - t.stopPrefix()
	n = completeUTF8(t.pending[:n])
	if n == 0 {
		return "", false
	}
	out = validText(t.pending[:n])
	t.pending = t.pending[:copy(t.pending, t.pending[n:])]
	return out, false
}

// Flush returns the held-back remainder at the end of a generation: a partial stop string that
// never completed is real text, and an incomplete UTF-8 character at the very end becomes U+FFFD.
// It returns "" after a stop.
func (t *TextStream) Flush() string {
	if t.stopped || len(t.pending) == 0 {
		return ""
	}
	out := validText(t.pending)
	t.pending = t.pending[:0]
	return out
}

// StopSequence returns the stop string that ended the stream, or "" while none has.
func (t *TextStream) StopSequence() string { return t.matched }

// firstStop finds where the stop string that completes first in pending starts, and which one
// it is. Text before pending holds no stop string, and no part of one that continues into
// pending (Push held back every such prefix), so searching pending alone is enough.
func (t *TextStream) firstStop() (start int, stop string, found bool) {
	bestEnd := 0
	for _, s := range t.stops {
		i := bytes.Index(t.pending, s)
		if i < 0 {
			continue
		}
		end := i + len(s)
		if !found || end < bestEnd || (end == bestEnd && i < start) {
			start, stop, bestEnd, found = i, string(s), end, true
		}
	}
	return start, stop, found
}

// stopPrefix returns the length of the longest suffix of pending that is a proper prefix of a
// stop string.
func (t *TextStream) stopPrefix() int { return HeldSuffix(t.pending, t.stops) }

// HeldSuffix returns the length of the longest suffix of text that is a proper prefix of one of
// markers: the bytes a stream must hold back until it knows whether a marker follows.
func HeldSuffix[T, M ~string | ~[]byte](text T, markers []M) int {
	longest := 0
	for _, m := range markers {
		for n := min(len(m)-1, len(text)); n > longest; n-- {
			if string(text[len(text)-n:]) == string(m[:n]) {
				longest = n
				break
			}
		}
	}
	return longest
}

// completeUTF8 returns the length of b without a trailing incomplete (but so far valid) UTF-8
// character.
func completeUTF8(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			break
		}
	}
	return len(b)
}

// validText converts b to a string, replacing each run of invalid UTF-8 with U+FFFD.
func validText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), string(utf8.RuneError))
}
