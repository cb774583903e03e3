package source

import (
	"context"
	"errors"
	"fmt"
)

// List is several sources as one: a reference belongs to the first source that reads it, and
// its resolving and downloading go to that source (by Reference.Source).
type List []Source

// Name is the names of the sources, for messages.
func (l List) Name() string {
	names := ""
	for i, s := range l {
		if i > 0 {
			names += ", "
		}
		names += s.Name()
	}
	return names
}

// Parse asks each source in turn. A name none of them reads gets the first source's refusal
// (so one source's words stay as they are); a source that reads it but finds it malformed
// answers for all.
func (l List) Parse(reference string) (Reference, error) {
	var first error
	for _, s := range l {
		ref, err := s.Parse(reference)
		if err == nil || !errors.Is(err, ErrNotReference) {
			return ref, err
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		first = fmt.Errorf("model %q: %w: no model source is configured", reference, ErrNotReference)
	}
	return Reference{}, first
}

// Resolve asks the source that parsed ref.
func (l List) Resolve(ctx context.Context, ref Reference) (*Resolved, error) {
	s, err := l.find(ref.Source)
	if err != nil {
		return nil, err
	}
	return s.Resolve(ctx, ref)
}

// Download asks the source that resolved r.
func (l List) Download(ctx context.Context, r *Resolved, dir string, progress func(Progress)) ([]string, error) {
	s, err := l.find(r.Ref.Source)
	if err != nil {
		return nil, err
	}
	return s.Download(ctx, r, dir, progress)
}

func (l List) find(name string) (Source, error) {
	for _, s := range l {
		if s.Name() == name {
			return s, nil
		}
	}
	return nil, fmt.Errorf("no model source is called %q", name)
}
