package hf

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockPath is where the lock for a download's final path lives: in the temp dir, so that the
// models folder holds only models.
func lockPath(final string) string {
	abs, err := filepath.Abs(final)
	if err != nil {
		abs = final
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(os.TempDir(), "superfluid-download-"+hex.EncodeToString(sum[:8])+".lock")
}

// lockFile takes an exclusive advisory lock on path (created if needed), waiting while another
// process holds it, until ctx ends. unlock releases it and removes the lock file.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if err != syscall.EWOULDBLOCK {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
