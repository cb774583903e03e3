//go:build !windows

package autostart

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// writeAtomic writes the login entry at p through a temporary file and a rename, so that a
// failed write never leaves half an entry for the desktop to run.
func writeAtomic(p, text string) error {
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		return fmt.Errorf("autostart: cannot write %s: %w", p, cause(err))
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("autostart: cannot write %s: %w", p, cause(err))
	}
	return nil
}

// disable removes the login entry; one already gone is not an error.
func disable() error {
	p, err := Path()
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("autostart: cannot remove %s: %w", p, cause(err))
	}
	return nil
}
