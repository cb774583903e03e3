package models

import (
	"context"
	"fmt"
	"path/filepath"
)

// Owns reports whether path lies inside the models folder (a pull's or the bundled model's
// file, as opposed to one added by path).
func (c *Catalog) Owns(path string) bool { return c.owns(path) }

// Relocate points the entry id at its files' new place (path and projector, "" for none)
// after the app moved them, in the store and in memory; the facts are read again from there.
func (c *Catalog) Relocate(ctx context.Context, id, path, projector string) error {
	c.mu.RLock()
	e, ok := c.entries[id]
	c.mu.RUnlock()
	if !ok {
		return fmt.Errorf("relocate %s: %w", id, ErrNoRecord)
	}
	r := e.Record
	r.Path, r.Projector = path, projector
	if err := c.st.PutModel(ctx, r); err != nil {
		return fmt.Errorf("relocate %s: %w", id, err)
	}
	fresh := describeEntry(r)
	c.mu.Lock()
	c.entries[id] = fresh
	c.mu.Unlock()
	return nil
}

// SetDir makes dir the models folder from now on: pulls are written there and rm deletes files
// only from there. The app calls it once it moved the models folder's files into dir.
func (c *Catalog) SetDir(dir string) {
	c.mu.Lock()
	c.dir = filepath.Clean(dir)
	c.mu.Unlock()
}
