package llm

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTextStream(t *testing.T) {
	tests := []struct {
		name   string
		stops  []string
		pieces []string
		want   []string // Push outputs, one per piece
		stopAt int      // index of the piece that completes a stop; -1 for none
		flush  string
	}{
		{"ascii passes through", nil, []string{"Hel", "lo"}, []string{"Hel", "lo"}, -1, ""},
		{"é split in 2", nil, []string{"caf\xc3", "\xa9"}, []string{"caf", "é"}, -1, ""},
		{"€ split in 3", nil, []string{"\xe2", "\x82", "\xac!"}, []string{"", "", "€!"}, -1, ""},
		{"😀 split in 4", nil, []string{"\xf0", "\x9f", "\x98", "\x80"}, []string{"", "", "", "😀"}, -1, ""},
		{"CJK split mid-characters", nil, []string{"\xe4\xb8", "\xad\xe6", "\x96\x87"}, []string{"", "中", "文"}, -1, ""},
		{"stop is a whole piece", []string{"</s>"}, []string{"Hello", "</s>", "more"}, []string{"Hello", "", ""}, 1, ""},
		{"text before stop in one piece", []string{"</s>"}, []string{"Hi</s>there"}, []string{"Hi"}, 0, ""},
		{"stop across pieces", []string{"</s>"}, []string{"Hi<", "/", "s", ">more"}, []string{"Hi", "", "", ""}, 3, ""},
		{"false start released", []string{"</s>"}, []string{"a</s", "x"}, []string{"a", "</sx"}, -1, ""},
		{"restart inside a false start", []string{"</s>"}, []string{"<", "<", "/s>"}, []string{"", "<", ""}, 2, ""},
		{"shorter stop completes first", []string{"abc", "ab"}, []string{"xa", "bc"}, []string{"x", ""}, 1, ""},
		{"same end: longer stop wins", []string{"bc", "abc"}, []string{"xab", "c"}, []string{"x", ""}, 1, ""},
		{"first completing stop wins over earlier start", []string{"abcd", "bc"}, []string{"abcd"}, []string{"a"}, 0, ""},
		{"flush releases a partial stop", []string{"</s>"}, []string{"foo</"}, []string{"foo"}, -1, "</"},
		{"flush replaces an incomplete character", nil, []string{"a\xe2\x82"}, []string{"a"}, -1, "\uFFFD"},
		{"multi-byte stop split", []string{"é!"}, []string{"caf\xc3", "\xa9", "!"}, []string{"caf", "", ""}, 2, ""},
		{"multi-byte stop false start", []string{"é!"}, []string{"caf\xc3", "\xa9", "s"}, []string{"caf", "", "és"}, -1, ""},
		{"stop of emoji", []string{"😀"}, []string{"ok \xf0\x9f", "\x98\x80 no"}, []string{"ok ", ""}, 1, ""},
		{"empty stop ignored", []string{""}, []string{"abc"}, []string{"abc"}, -1, ""},
		{"invalid byte becomes U+FFFD", nil, []string{"a\xffb"}, []string{"a\uFFFDb"}, -1, ""},
		{"empty pieces", []string{"x"}, []string{"", "a", ""}, []string{"", "a", ""}, -1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := NewTextStream(tt.stops)
			for i, p := range tt.pieces {
				out, stopped := ts.Push([]byte(p))
				if out != tt.want[i] {
					t.Errorf("Push(%q) #%d = %q, want %q", p, i, out, tt.want[i])
				}
				if want := tt.stopAt >= 0 && i >= tt.stopAt; stopped != want {
					t.Errorf("Push(%q) #%d stopped = %v, want %v", p, i, stopped, want)
				}
			}
			if got := ts.Flush(); got != tt.flush {
				t.Errorf("Flush = %q, want %q", got, tt.flush)
			}
			if got := ts.Flush(); got != "" {
				t.Errorf("second Flush = %q, want empty", got)
			}
		})
	}
}

// truncateAtStop is the reference: text up to where the first stop string completes (the longest
// one among those completing at the same byte), and whether one did.
func truncateAtStop(text string, stops []string) (string, bool) {
	for end := 0; end <= len(text); end++ {
		best := -1
		for _, s := range stops {
			if s != "" && strings.HasSuffix(text[:end], s) && len(s) > best {
				best = len(s)
			}
		}
		if best >= 0 {
			return text[:end-best], true
		}
	}
	return text, false
}

func FuzzTextStream(f *testing.F) {
	f.Add("Hello </s> world", "</s>", "", []byte{1, 2, 3})
	f.Add("café € 😀 中文 done", "😀 中", "é €", []byte{1, 1, 1, 1, 1, 1, 1})
	f.Add("aaab aab ab", "aab", "ab", []byte{2, 5, 1})
	f.Add("<</s</s>", "</s>", "<", []byte{0, 1, 0, 2})
	f.Fuzz(func(t *testing.T, text, stopA, stopB string, cuts []byte) {
		text = strings.ToValidUTF8(text, "?")
		stops := []string{strings.ToValidUTF8(stopA, "?"), strings.ToValidUTF8(stopB, "?")}
		want, wantStop := truncateAtStop(text, stops)

		ts := NewTextStream(stops)
		var got strings.Builder
		rest, stopped := []byte(text), false
		push := func(p []byte) {
			out, st := ts.Push(p)
			if !utf8.ValidString(out) {
				t.Fatalf("Push emitted invalid UTF-8 %q", out)
			}
			if stopped && (out != "" || !st) {
				t.Fatalf("Push after a stop = %q, %v", out, st)
			}
			stopped = st
			got.WriteString(out)
		}
		for _, c := range cuts {
			n := min(int(c)%8, len(rest))
			push(rest[:n])
			rest = rest[n:]
		}
		push(rest)
		flush := ts.Flush()
		if !utf8.ValidString(flush) {
			t.Fatalf("Flush emitted invalid UTF-8 %q", flush)
		}
		got.WriteString(flush)
		if got.String() != want || stopped != wantStop {
			t.Fatalf("stops %q: got %q (stopped %v), want %q (stopped %v)", stops, got.String(), stopped, want, wantStop)
		}
	})
}

func TestTextStreamStopSequence(t *testing.T) {
	tests := []struct {
		name   string
		stops  []string
		pieces []string
		want   string
	}{
		{"no stop", []string{"</s>"}, []string{"Hello"}, ""},
		{"stop across pieces", []string{"x", "</s>"}, []string{"Hi<", "/s", ">more"}, "</s>"},
		{"shorter stop completes first", []string{"abc", "ab"}, []string{"xa", "bc"}, "ab"},
		{"same end: longer stop wins", []string{"bc", "abc"}, []string{"xab", "c"}, "abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := NewTextStream(tt.stops)
			for _, p := range tt.pieces {
				ts.Push([]byte(p))
			}
			ts.Flush()
			if got := ts.StopSequence(); got != tt.want {
				t.Errorf("StopSequence = %q, want %q", got, tt.want)
			}
		})
	}
}
