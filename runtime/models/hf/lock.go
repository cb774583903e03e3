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

// lockPath is where the lock for a download's final path lives: in the client's lock folder
// (<models>/.locks), else in a .locks folder beside the download; never in a shared temp
// folder, where another user could create (or link) the name first. The folder is made 0700.
func (c *Client) lockPath(final string) (string, error) {
	abs, err := filepath.Abs(final)
	if err != nil {
		abs = final
	}
	dir := c.lockDir
	if dir == "" {
		dir = filepath.Join(filepath.Dir(abs), ".locks")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create the download lock folder: %w", err)
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("download lock folder: %w", err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("download lock folder %s is not a folder; remove it", dir)
	}
	if st.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return "", fmt.Errorf("download lock folder: %w", err)
		}
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(dir, hex.EncodeToString(sum[:16])+".lock"), nil
}

// lockFile takes an exclusive advisory lock on path (created 0600 if needed, never through a
// symbolic link), waiting while another process holds it, until ctx ends. unlock releases it;
// the file stays (removing a lock file others may have open would let two holders in).
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
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
