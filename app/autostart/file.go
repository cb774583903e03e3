//go:build !windows

package autostart

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// writeAtomic writes the login entry at p (making its folder) through a temporary file and a
// rename, so that a failed write never leaves half an entry for the desktop to run.
func writeAtomic(p, text string) error {
	if err := mayReplace(p); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("autostart: cannot make %s: %w", filepath.Dir(p), cause(err))
	}
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

// mayReplace refuses an entry at p that superfluid did not write: a user's own entry of the
// same name is theirs to change. None there is fine.
func mayReplace(p string) error {
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("autostart: cannot read %s: %w", p, cause(err))
	}
	if !marked(string(b)) {
		return notOurs(p)
	}
	return nil
}

// notOurs says which entry is left alone and what the user can do.
func notOurs(p string) error {
	return fmt.Errorf("%w: %s was not written by superfluid (it has no %s), so it is left as it is; edit or remove it yourself", ErrNotOurs, p, markName)
}

// disable removes the login entry superfluid wrote; one already gone is not an error.
func disable() error {
	p, err := Path()
	if err != nil {
		return err
	}
	if err := mayReplace(p); err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("autostart: cannot remove %s: %w", p, cause(err))
	}
	return nil
}
