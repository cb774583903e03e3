// Package lib_test checks the shell helpers the install scripts share; make test runs those
// scripts first, so a helper that fails offline fails the whole build.
package lib_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// stubs puts dpkg-query (nothing installed), apt-get (offline: it fails, update first, and counts
// its runs in calls) and sudo (runs its command) first on PATH: no test reaches the network or apt.
func stubs(t *testing.T) (path, calls string) {
	bin := t.TempDir()
	calls = filepath.Join(bin, "calls")
	for name, body := range map[string]string{
		"dpkg-query": "exit 1",
		"apt-get":    "echo \"$*\" >>" + calls + "; echo 'E: Unable to locate package' >&2; exit 100",
		"sudo":       "[ \"$1\" = -n ] && shift; exec \"$@\"",
	} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin + ":" + os.Getenv("PATH"), calls
}

// optional runs apt_install_optional for a package that does not exist, in a script that stops
// at the first error as the callers may, with env as its whole environment.
func optional(t *testing.T, env ...string) (string, error) {
	script := "set -euo pipefail; . ./apt.sh; apt_install_optional simtest 'the sim tests' superfluid-no-such-package; echo done"
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestAptOptionalNeverFails: offline, apt_install_optional says the tests will skip and
// returns 0, with no HOME (a bare environment), with a cache folder it cannot make, and a
// second time within the hour without running apt-get again.
func TestAptOptionalNeverFails(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	path, calls := stubs(t)
	cache := t.TempDir()
	notDir := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		env  []string
		runs int // apt-get runs so far
	}{
		{"no HOME", []string{"PATH=" + path, "TMPDIR=" + t.TempDir()}, 1},
		{"a cache folder it cannot make", []string{"PATH=" + path, "HOME=/nonexistent", "XDG_CACHE_HOME=" + notDir, "TMPDIR=" + t.TempDir()}, 2},
		{"first try", []string{"PATH=" + path, "HOME=/nonexistent", "XDG_CACHE_HOME=" + cache}, 3},
		{"within the hour", []string{"PATH=" + path, "HOME=/nonexistent", "XDG_CACHE_HOME=" + cache}, 3},
	} {
		out, err := optional(t, tt.env...)
		if err != nil || !strings.Contains(out, "the sim tests will skip") || !strings.HasSuffix(out, "done\n") {
			t.Errorf("%s: %v\n%s", tt.name, err, out)
		}
		b, _ := os.ReadFile(calls)
		if n := strings.Count(string(b), "\n"); n != tt.runs {
			t.Errorf("%s: apt-get ran %d times in all, want %d:\n%s", tt.name, n, tt.runs, b)
		}
	}
	if _, err := os.Stat(filepath.Join(cache, "superfluid", "simtest.failed")); err != nil {
		t.Errorf("the failed install is not remembered: %v", err)
	}
}
