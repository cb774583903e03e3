package bench

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// TestAtOnce: the most streams between first and last token at one moment; spans that touch
// overlap, spans one after another do not.
func TestAtOnce(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(a, b int) sample {
		return sample{first: t0.Add(time.Duration(a) * time.Second), last: t0.Add(time.Duration(b) * time.Second)}
	}
	for _, c := range []struct {
		samples []sample
		want    int
	}{
		{nil, 0},
		{[]sample{at(0, 5)}, 1},
		{[]sample{at(0, 1), at(2, 3), at(4, 5)}, 1},                      // one after another
		{[]sample{at(0, 2), at(2, 4)}, 2},                                // touching
		{[]sample{at(0, 10), at(1, 2), at(3, 9), at(4, 5), at(6, 7)}, 3}, // nested
		{[]sample{at(3, 3), at(3, 3), at(3, 3)}, 3},                      // single events at one instant
	} {
		if got := atOnce(c.samples); got != c.want {
			t.Errorf("atOnce(%v) = %d, want %d", c.samples, got, c.want)
		}
	}
}

// TestServingLine: serve's listening line with a model to load and without one.
func TestServingLine(t *testing.T) {
	for _, c := range []struct{ line, model, url string }{
		{"superfluid: serving 1 model, loading m-q8 on http://127.0.0.1:4001 (data in /d)", "m-q8", "http://127.0.0.1:4001"},
		{"superfluid: serving 0 models on http://127.0.0.1:4002 (data in /d)", "", "http://127.0.0.1:4002"},
	} {
		m := servingLine.FindStringSubmatch(c.line)
		if m == nil || m[1] != c.model || m[2] != c.url {
			t.Errorf("%q: %q, want model %q and url %q", c.line, m, c.model, c.url)
		}
	}
}

// TestProcessCPUOf reads this process's CPU from /proc, after burning some.
func TestProcessCPUOf(t *testing.T) {
	if runtime.GOOS != "linux" {
		if _, ok := processCPUOf(os.Getpid()); ok {
			t.Fatal("read a /proc that is not there")
		}
		t.Skip("no /proc")
	}
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
	}
	if cpu, ok := processCPUOf(os.Getpid()); !ok || cpu <= 0 {
		t.Fatalf("processCPUOf(self) = %v, %v", cpu, ok)
	}
	if _, ok := processCPUOf(-1); ok {
		t.Fatal("read the CPU of no process")
	}
}
