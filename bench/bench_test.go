package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMedianMin(t *testing.T) {
	for _, tc := range []struct {
		name          string
		xs            []float64
		median, least float64
	}{
		{"empty", nil, 0, 0},
		{"one", []float64{3}, 3, 3},
		{"odd", []float64{5, 1, 3}, 3, 1},
		{"even takes the upper middle", []float64{4, 1, 3, 2}, 3, 1},
		{"repeats", []float64{2, 2, 9, 2, 1}, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			xs := append([]float64(nil), tc.xs...)
			median, least := medianMin(xs)
			if median != tc.median || least != tc.least {
				t.Errorf("medianMin(%v) = %v, %v; want %v, %v", tc.xs, median, least, tc.median, tc.least)
			}
			for i := range xs {
				if xs[i] != tc.xs[i] {
					t.Fatalf("medianMin reordered its argument: %v", xs)
				}
			}
		})
	}
}

func TestKnown(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"all", true}, {"single", true}, {"replay", true}, {"streams", true}, {"shared", true},
		{"pull", true}, {"load", true}, {"tools", true}, {"batch", true}, {"qos", true}, {"soak", true}, {"", false}, {"Pull", false}, {"everything", false},
	} {
		if got := Known(tc.name); got != tc.want {
			t.Errorf("Known(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
	list := SuiteList()
	if !strings.HasPrefix(list, "single, replay, ") || !strings.HasSuffix(list, " or all") {
		t.Errorf("SuiteList() = %q", list)
	}
	for _, s := range Suites {
		if !strings.Contains(list, s.Name+",") && !strings.Contains(list, s.Name+" or all") {
			t.Errorf("SuiteList() = %q lacks %s", list, s.Name)
		}
	}
}

// writeRandom writes n random bytes at a new file in t's temporary folder.
func writeRandom(t *testing.T, n int) string {
	t.Helper()
	data := make([]byte, n)
	rand.Read(data)
	path := filepath.Join(t.TempDir(), "model.gguf")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestMeasurePull(t *testing.T) {
	path := writeRandom(t, 3<<20)
	tmp := t.TempDir()
	r, err := measurePull(context.Background(), path, 3, tmp)
	if err != nil {
		t.Fatal(err)
	}
	if r.size != 3<<20 || len(r.plain) != 3 || len(r.download) != 3 {
		t.Fatalf("size %d, %d plain and %d download runs; want %d, 3 and 3", r.size, len(r.plain), len(r.download), 3<<20)
	}
	for i := range 3 {
		if r.plain[i] <= 0 || r.download[i] <= 0 {
			t.Errorf("run %d: plain %v MB/s, download %v MB/s; want both positive", i, r.plain[i], r.download[i])
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the runs left %d entries in the temporary folder", len(left))
	}
}

func TestRunPull(t *testing.T) {
	var out bytes.Buffer
	err := Run(writeRandom(t, 1<<20), Options{Suite: "pull", Repeat: 2, TempDir: t.TempDir()}, &out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"== pull:", "too small to measure", "plain GET into a file", "Download (sha256, verify)", "Download/plain (medians)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRunErrors(t *testing.T) {
	path := writeRandom(t, 16)
	for _, tc := range []struct {
		name  string
		model string
		opts  Options
		want  string
	}{
		{"unknown suite", path, Options{Suite: "bogus", Repeat: 1}, `unknown suite "bogus"`},
		{"no runs", path, Options{Suite: "pull", Repeat: 0}, "repeat must be at least 1"},
		{"missing model", filepath.Join(t.TempDir(), "none.gguf"), Options{Suite: "pull", Repeat: 1}, "model file"},
		{"no app", path, Options{Suite: "load", Repeat: 1}, "Options.Serve is nil"},
		{"no program for the soak", path, Options{Suite: "soak", Repeat: 1}, "Options.Command is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Run(tc.model, tc.opts, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run: %v; want an error containing %q", err, tc.want)
			}
		})
	}
}
