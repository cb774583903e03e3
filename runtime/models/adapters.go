package models

import (
	"fmt"
	"slices"
	"strings"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/llm"
)

// A LoRA adapter (a GGUF with general.type "adapter") is a catalog entry of kind KindAdapter:
// listed under its base model, applied per request (the core's LoRA registry), never loaded as
// a model. Lookup, List and the manager know models only; Adapters and LookupAdapter find the
// adapters.

// ErrIsAdapter is Lookup's refusal of an adapter's id where a model is wanted; it wraps
// llm.ErrInvalidInput (a 400: the client named the wrong thing).
var ErrIsAdapter = fmt.Errorf("%w: a LoRA adapter is not a model", llm.ErrInvalidInput)

// adapterError says what to do with an adapter named as a model. It is ErrIsAdapter without
// repeating its words.
func adapterError(e *Entry) error {
	use := fmt.Sprintf("name this adapter in \"lora\": [{\"id\": %q}] (superfluid list shows the adapters under their models)", e.ID)
	if e.BaseModel != "" {
		use = fmt.Sprintf("name %s as the model and this adapter in \"lora\": [{\"id\": %q}]", e.BaseModel, e.ID)
	}
	of := ""
	if e.BaseModel != "" {
		of = " of " + e.BaseModel
	}
	return adapterRefusal{fmt.Errorf("%w: %q is a LoRA adapter%s, not a model; %s", llm.ErrInvalidInput, e.ID, of, use)}
}

// adapterRefusal is an error that is ErrIsAdapter (and llm.ErrInvalidInput, through its cause).
type adapterRefusal struct{ error }

func (r adapterRefusal) Unwrap() error      { return r.error }
func (adapterRefusal) Is(target error) bool { return target == ErrIsAdapter }

// IsAdapter reports whether the entry is a LoRA adapter rather than a model.
func (e *Entry) IsAdapter() bool { return e.Kind == KindAdapter }

// LookupAdapter finds the adapter a client names by its id, as Lookup finds a model; a model's
// id is refused (llm.ErrInvalidInput).
func (c *Catalog) LookupAdapter(name string) (*Entry, error) {
	e, err := c.lookup(name)
	if err != nil {
		return nil, err
	}
	if !e.IsAdapter() {
		return nil, fmt.Errorf("%w: %q is a model, not a LoRA adapter", llm.ErrInvalidInput, name)
	}
	return e, nil
}

// Adapters lists the adapters of the model named base (by any name Lookup takes; an alias's are
// those of the model it copies), sorted by id; base "" lists every adapter, those of no known
// base included.
func (c *Catalog) Adapters(base string) []*Entry {
	c.sync(false)
	var ids []string
	if base != "" {
		m, err := c.Lookup(base)
		if err != nil {
			return nil
		}
		ids = []string{m.ID}
		if m.IsAlias() {
			ids = append(ids, m.AliasOf)
		}
	}
	c.mu.RLock()
	var out []*Entry
	for _, e := range c.entries {
		if e.IsAdapter() && (base == "" || slices.Contains(ids, e.BaseModel)) {
			out = append(out, e)
		}
	}
	c.mu.RUnlock()
	slices.SortFunc(out, func(a, b *Entry) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// adapterBase is the base model of the adapter at path: base when given (refused, naming both
// files, when the adapter does not fit it), else the one catalog model it fits ("" when none
// or several do: the core then knows it by id only).
func (c *Catalog) adapterBase(path, base string) (string, error) {
	adapter, err := gguf.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNotModel, err)
	}
	if base != "" {
		m, err := c.Lookup(base)
		if err != nil {
			return "", err
		}
		if err := gguf.CheckAdapter(m.Path, path); err != nil {
			return "", fmt.Errorf("%w: %v", llm.ErrInvalidInput, err)
		}
		if m.IsAlias() {
			return m.AliasOf, nil
		}
		return m.ID, nil
	}
	arch := adapter.Architecture()
	var fits []string
	for _, m := range c.List() {
		if m.IsAlias() || m.Err != nil || m.Architecture != arch {
			continue
		}
		parts, err := gguf.ReadParts(m.Path)
		if err == nil && gguf.FitAdapter(parts, adapter) == nil {
			fits = append(fits, m.ID)
		}
	}
	if len(fits) == 1 {
		return fits[0], nil
	}
	return "", nil
}

// Orphaned reports whether the file at path lies in the models folder and no entry uses it, as
// its model file or its projector: a delete may remove it.
func (c *Catalog) Orphaned(path string) bool {
	if path == "" || !c.owns(path) {
		return false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, e := range c.entries {
		if e.Path == path || e.Projector == path {
			return false
		}
	}
	return true
}
