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
)

// ID names the entry on every platform (the file, the launchd label, the registry value).
const ID = "io.superfluid.app"

// Command is the running binary's absolute path (links resolved, so that the entry survives
// a symlink being moved) followed by args.
func Command(args ...string) ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("autostart: where is this program: %w", err)
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	abs, err := filepath.Abs(exe)
	if err != nil {
		return nil, fmt.Errorf("autostart: where is this program: %w", err)
	}
	return append([]string{abs}, args...), nil
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
