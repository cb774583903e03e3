package models

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/llm"
)

// AddLocal registers the GGUF file at path in place (nothing is copied) under id, or under the
// file's name without .gguf when id is "". Registering a path that is already registered
// returns its entry.
func (c *Catalog) AddLocal(ctx context.Context, path, id string) (*Entry, error) {
	return c.Add(ctx, AddRequest{Path: path, ID: id})
}

// AddRequest is a local file to register (Add).
type AddRequest struct {
	// Path is the GGUF file (a model, or a LoRA adapter); ID its id ("" for the file's name
	// without .gguf).
	Path, ID string
	// Projector is the model's multimodal projector ("" looks for one beside it that fits).
	Projector string
	// Base is the catalog model an adapter applies to ("" finds the one it fits, if one does).
	Base string
}

// Add registers a local file in place. Adding a path that is already registered returns its
// entry, updated when the projector it gets (named, or found beside it) has changed.
func (c *Catalog) Add(ctx context.Context, req AddRequest) (*Entry, error) {
	abs, err := filepath.Abs(req.Path)
	if err != nil {
		return nil, fmt.Errorf("model path %s: %w", req.Path, err)
	}
	st, err := os.Stat(abs)
	switch {
	case err != nil:
		return nil, fmt.Errorf("model file %s: %w", req.Path, err)
	case st.IsDir():
		return nil, fmt.Errorf("%w: %s is a directory; name a .gguf file inside it", llm.ErrInvalidInput, req.Path)
	}
	proj := req.Projector
	if proj != "" {
		if proj, err = filepath.Abs(proj); err != nil {
			return nil, fmt.Errorf("projector path %s: %w", req.Projector, err)
		}
	}
	id := req.ID
	derived := id == ""
	if derived {
		id = idFromFile(filepath.Base(abs))
	}
	if err := checkID(id); err != nil {
		return nil, err
	}
	for _, e := range c.all() {
		if e.Path == abs && e.Source != SourceAlias && (derived || e.ID == id) {
			r := e.Record
			if e.IsAdapter() {
				if req.Base == "" || req.Base == e.BaseModel {
					return e, nil
				}
				r.BaseModel = req.Base
				return c.Register(ctx, r)
			}
			changed := false
			if r.Projector, changed = projectorChange(e, proj); !changed {
				return e, nil
			}
			return c.Register(ctx, r)
		}
	}
	if e, err := c.lookup(id); err == nil && e.Path != abs && sameContent(e.Path, abs) {
		return e, nil // the same model under this name already (e.g. the bundled one)
	}
	return c.Register(ctx, Record{ID: id, Path: abs, Source: SourceLocal, Projector: proj, BaseModel: req.Base})
}

// projectorChange is the projector e gets when added again with proj ("": the one it has while
// that can be read, else the one found beside it) and whether that changes it.
func projectorChange(e *Entry, proj string) (string, bool) {
	switch {
	case proj != "":
		return proj, proj != e.Projector
	case e.Projector != "" && readable(e.Projector):
		return e.Projector, false
	}
	found := findProjector(e.Path, e.Quantization)
	return found, found != e.Projector
}

// readable reports whether path is a projector the catalog can read now.
func readable(path string) bool {
	f, err := gguf.ReadFile(path)
	return err == nil && f.IsProjector()
}

// all is every entry, models and adapters, unsorted.
func (c *Catalog) all() []*Entry {
	c.sync(false)
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*Entry, 0, len(c.entries))
	for _, e := range c.entries {
		out = append(out, e)
	}
	return out
}
