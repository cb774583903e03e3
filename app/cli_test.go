package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeBadModel: a bad MODEL argument is one line on stderr and exit code 2.
func TestServeBadModel(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.gguf")
	if err := os.WriteFile(text, []byte("these are not weights\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, model, want string
	}{
		{"missing file", filepath.Join(dir, "nope.gguf"), "does not exist"},
		{"directory", dir, "is a directory"},
		{"not gguf", text, "not a GGUF"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main([]string{"superfluid", "serve", "--data-dir", t.TempDir(), "--port", "0", c.model}, &stdout, &stderr)
			if code != 2 {
				t.Fatalf("exit code %d, want 2 (stderr %q)", code, stderr.String())
			}
			out := strings.TrimSpace(stderr.String())
			if strings.Count(out, "\n") != 0 || !strings.Contains(out, c.want) {
				t.Fatalf("stderr %q: want one line containing %q", out, c.want)
			}
		})
	}
}

func TestCommandLineUsage(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"superfluid"}, 2, "usage"},
		{[]string{"superfluid", "frobnicate"}, 2, "unknown command"},
		{[]string{"superfluid", "serve"}, 2, "no model given"},
		{[]string{"superfluid", "serve", "a.gguf", "b.gguf"}, 2, "expected one model"},
		{[]string{"superfluid", "serve", "--port", "x", "a.gguf"}, 2, "invalid value"},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		if code := Main(c.args, &stdout, &stderr); code != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d stderr %q; want %d containing %q", c.args, code, stderr.String(), c.code, c.want)
		}
	}
}
