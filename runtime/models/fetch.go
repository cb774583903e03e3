package models

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"sync/atomic"
)

// FetchFunc brings back the file at path, missing from disk, from where a copy of it is kept
// (an S3 storage's bucket, for the local copy a pull into it made). It returns an error
// wrapping fs.ErrNotExist when it keeps no copy of that path.
type FetchFunc func(ctx context.Context, path string) error

// fetcher is the Manager's FetchFunc (SetFetch); nil: a missing file stays missing.
type fetcher struct{ fn atomic.Pointer[FetchFunc] }

// SetFetch makes the manager call fetch before it loads a model whose file is missing; the
// app sets it once the storages are known (nil unsets it).
func (m *Manager) SetFetch(fetch FetchFunc) {
	if fetch == nil {
		m.fetch.fn.Store(nil)
		return
	}
	m.fetch.fn.Store(&fetch)
}

// fetchMissing brings path back through the FetchFunc when it is missing: true when it did.
func (m *Manager) fetchMissing(ctx context.Context, path string) (bool, error) {
	fn := m.fetch.fn.Load()
	if fn == nil {
		return false, nil
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err := (*fn)(ctx, path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil // not a copy the fetcher keeps: the entry's own error stands
		}
		return false, err
	}
	return true, nil
}
