package models

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/superfluid/superfluid/runtime/gguf"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models/source"
)

// Source is a place models are pulled from (source.Source; Hugging Face is one, registered by
// app), and Progress one file's download as a source reports it.
type (
	Source   = source.Source
	Progress = source.Progress
)

// Progress statuses.
const (
	StatusPulling   = source.StatusPulling
	StatusVerifying = source.StatusVerifying
	StatusDone      = source.StatusDone
)

// ErrNotReference reports a name no source pulls (see source.ErrNotReference).
var ErrNotReference = source.ErrNotReference

// Pull resolves a reference with src, downloads its files into the models folder (the source
// resumes a partial download and verifies it), checks them with the strict GGUF reader and
// registers the model. A reference already in the catalog with its files present returns its
// entry at once. progress sees every file's progress; the manager's subscribers see it too.
func (m *Manager) Pull(ctx context.Context, src Source, reference string, progress func(Progress)) (*Entry, error) {
	return m.PullInto(ctx, src, reference, "", progress)
}

// PullInto is Pull with the files downloaded under base, an absolute folder (a storage's),
// instead of the models folder ("" is the models folder); the entry points at them there. A
// reference already in the catalog with its files present under base returns its entry; one
// elsewhere is refused (ErrInvalidInput, saying where it is), since an id names one file.
func (m *Manager) PullInto(ctx context.Context, src Source, reference, base string, progress func(Progress)) (*Entry, error) {
	root, under := m.cat.Dir(), m.cat.owns
	if base != "" {
		if !filepath.IsAbs(base) {
			return nil, fmt.Errorf("%w: pull into %s: not an absolute folder", llm.ErrInvalidInput, base)
		}
		root, under = filepath.Clean(base), func(p string) bool { return inside(filepath.Clean(base), p) }
	}
	ref, err := src.Parse(reference)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", llm.ErrInvalidInput, err)
	}
	res, err := src.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	if len(res.Files) == 0 {
		return nil, fmt.Errorf("%w: pull %s: the source resolved no files", llm.ErrEngineFailure, reference)
	}
	id := res.ID
	var pulled *Entry // already in the catalog: only its projector may be missing
	if e, err := m.cat.lookup(id); err == nil && e.Err == nil && e.SHA256 == res.Files[0].SHA256 {
		if base != "" && !under(e.Path) {
			// An id names one file: saying "done" would leave the storage without the model.
			return nil, fmt.Errorf("%w: pull %s into %s: the model is already in the catalog at %s; remove it first (superfluid rm %s) to pull it into this storage",
				llm.ErrInvalidInput, reference, base, e.Path, id)
		}
		if res.Projector == nil || e.Projector != "" || e.IsAdapter() {
			return e, nil
		}
		// Pulled before pulls brought projectors: fetch the projector alone.
		pulled = e
		only := *res
		only.Files = nil
		res = &only
	}
	// The source names the folder; a folder outside the models folder (or the storage's) would
	// let a download replace any file of the user's.
	dir := filepath.Join(root, filepath.FromSlash(res.Folder))
	if !filepath.IsLocal(filepath.FromSlash(res.Folder)) || !under(dir) {
		return nil, fmt.Errorf("%w: pull: pull %s: %s is outside the models folder %s: %w", llm.ErrEngineFailure, ref.Repo, dir, root, source.ErrUnsafe)
	}
	// A storage's folder may be a share others write: a symbolic link in it must not lead the
	// download out of it (rev20b). The deepest part of dir that exists is resolved; a link
	// swapped in after this check is not caught.
	if base != "" {
		existing := dir
		for {
			if _, err := os.Lstat(existing); err == nil || filepath.Dir(existing) == existing {
				break
			}
			existing = filepath.Dir(existing)
		}
		realRoot, err1 := filepath.EvalSymlinks(root)
		realDir, err2 := filepath.EvalSymlinks(existing)
		if err1 != nil || err2 != nil || (realDir != realRoot && !inside(realRoot, realDir)) {
			return nil, fmt.Errorf("%w: pull: pull %s: %s leads outside the folder %s through a symbolic link: %w", llm.ErrEngineFailure, ref.Repo, dir, root, source.ErrUnsafe)
		}
	}
	paths, err := src.Download(ctx, res, dir, func(p Progress) {
		if progress != nil {
			progress(p)
		}
		m.events.publish(Event{Kind: EventPull, Model: id, Status: p.Status, Total: p.Total, Completed: p.Completed})
	})
	if err != nil {
		return nil, err
	}
	projector := ""
	if res.Projector != nil && len(paths) > 0 {
		projector, paths = paths[len(paths)-1], paths[:len(paths)-1]
	}
	r := Record{ID: id, Source: ref.Source, Repo: ref.Repo, Revision: res.Revision}
	if pulled != nil {
		r = pulled.Record
	} else {
		r.Path, r.File, r.SHA256 = paths[0], res.Files[0].Path, res.Files[0].SHA256
	}
	r.Projector = usableProjector(r.Path, projector)
	e, err := m.cat.Register(ctx, r)
	if err != nil {
		if errors.Is(err, ErrNotModel) && pulled == nil {
			for _, p := range append(paths, projector) {
				if p != "" {
					os.Remove(p)
				}
			}
			return nil, fmt.Errorf("%w: %s downloaded but is not a usable GGUF model, so it was not registered: %v", llm.ErrInvalidInput, r.File, err)
		}
		return nil, err
	}
	m.events.publish(Event{Kind: EventCatalog, Model: id})
	return e, nil
}

// inside reports whether path is below dir (not dir itself).
func inside(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && filepath.IsLocal(rel)
}

// usableProjector is the projector a pull fetched when it fits the model, else "": the model
// is registered without it (a repository's projector for another of its models should not
// cost the pull), and the log says why.
func usableProjector(model, projector string) string {
	if projector == "" {
		return ""
	}
	if err := gguf.CheckProjector(model, projector); err != nil {
		slog.Warn("the pulled projector does not fit the model; registering the model without it", "err", err)
		return ""
	}
	return projector
}
