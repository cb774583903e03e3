// Package autostart makes the desktop start superfluid when the user logs in: an XDG autostart
// entry on Linux and the BSDs, a LaunchAgent on macOS, the registry's Run key on Windows. It
// is its own small package without cgo so that each platform's file can be vetted alone
// (GOOS=darwin, GOOS=windows) from any machine.
package autostart

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ID names the entry on every platform (the file, the launchd label, the registry value).
const ID = "io.superfluid.app"

// Command is the running binary's absolute path (links resolved, so that the entry survives
// a symlink being moved) followed by args. A binary that `go run` or `go test` built is
// refused: it is deleted when that command ends, and login would run nothing.
func Command(args ...string) ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("autostart: where is this program: %w", err)
	}
	return command(exe, os.TempDir(), args)
}

func command(exe, tmp string, args []string) ([]string, error) {
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	abs, err := filepath.Abs(exe)
	if err != nil {
		return nil, fmt.Errorf("autostart: where is this program: %w", err)
	}
	if temporary(abs, tmp) {
		return nil, fmt.Errorf("autostart: this superfluid is a temporary build (%s) that goes away when go run or go test ends; install it (make build, or a package) and turn this on from the installed one", abs)
	}
	return append([]string{abs}, args...), nil
}

// temporary reports whether exe lies in the temporary folder tmp or in a go-build folder
// (go run's and go test's work directories, go-build and digits, and the build cache,
// go-build): a folder of the user's that only starts so (go-builder) is not one.
func temporary(exe, tmp string) bool {
	for _, part := range strings.Split(filepath.ToSlash(exe), "/") {
		if n, ok := strings.CutPrefix(part, "go-build"); ok && strings.Trim(n, "0123456789") == "" {
			return true
		}
	}
	if tmp == "" {
		return false
	}
	if real, err := filepath.EvalSymlinks(tmp); err == nil {
		tmp = real // macOS: /var/folders/... is /private/var/folders/...
	}
	rel, err := filepath.Rel(tmp, exe)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// Enabled reports whether the entry is there (and not disabled by the desktop's own settings
// where they can). It reads the entry each time: one removed by hand reads as off.
func Enabled() bool { return enabled() }

// Enable writes the entry so that login runs argv (argv[0] an absolute path).
func Enable(argv []string) error {
	if len(argv) == 0 || !filepath.IsAbs(argv[0]) {
		return fmt.Errorf("autostart: the command must start with an absolute path, not %q", argv)
	}
	return enable(argv)
}

// ErrNotOurs is the error of Enable and Disable for an entry of ID that superfluid did not write
// (it lacks the mark): the user's own, left as it is.
var ErrNotOurs = errors.New("autostart: not superfluid's own entry")

// Disable removes the entry; no entry is not an error.
func Disable() error { return disable() }

// cause is a path error's reason alone ("permission denied"), for messages that name the path
// themselves.
func cause(err error) error {
	if inner := errors.Unwrap(err); inner != nil {
		return inner
	}
	return err
}
