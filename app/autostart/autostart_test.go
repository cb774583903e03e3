package autostart

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCommandRefusesTemporaryBuild: the binary go test (or go run) built is deleted when it
// ends, so the entry would run nothing at login: Command refuses it, saying what to do; a
// binary in a go-build folder is refused; an installed one, or one in the temporary folder
// that no go command made (a CI checkout under /tmp, an unpacked tarball), is not.
func TestCommandRefusesTemporaryBuild(t *testing.T) {
	_, err := Command("--hidden") // this test binary: $TMPDIR/go-build…/autostart.test
	if err == nil || !strings.Contains(err.Error(), "temporary build") || !strings.Contains(err.Error(), "install it") {
		t.Fatalf("Command from a test binary: %v", err)
	}
	tmp := t.TempDir()
	for _, tt := range []struct {
		exe string
		ok  bool
	}{
		{filepath.Join(tmp, "ci", "main", "bin", "superfluid"), true},
		{filepath.Join(tmp, "go-build123", "b001", "exe", "superfluid"), false},
		{"/home/me/.cache/go-build/ab/superfluid", false},
		{"/usr/local/bin/superfluid", true},
		{"/opt/go-builder/superfluid", true}, // only go-build and go-build<digits> are go's
		{"/opt/go-builder/bin/superfluid", true},
		{"/home/me/go-build-tools/superfluid", true},
	} {
		argv, err := command(tt.exe, []string{"--hidden"})
		if tt.ok != (err == nil) {
			t.Errorf("%s: %q %v", tt.exe, argv, err)
		}
		if err == nil && (argv[0] != tt.exe || argv[1] != "--hidden") {
			t.Errorf("%s: argv %q", tt.exe, argv)
		}
	}
}
