package models

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models/hf"
)

// IsReference reports whether name is a Hugging Face reference rather than a catalog id or a
// path: it has an owner and a repository (hf.co/OWNER/REPO..., OWNER/REPO:QUANT, ...).
func IsReference(name string) bool {
	_, err := hf.ParseRef(name)
	return err == nil
}

// Pull resolves a Hugging Face reference, downloads its files into the models folder (resuming
// a partial download, verifying the sha256), checks them with the strict GGUF reader and
// registers the model. A reference already in the catalog with its files present returns its
// entry at once. progress sees every file's progress; the manager's subscribers see it too.
func (m *Manager) Pull(ctx context.Context, client *hf.Client, reference string, progress func(hf.Progress)) (*Entry, error) {
	ref, err := hf.ParseRef(reference)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", llm.ErrInvalidInput, err)
	}
	res, err := client.Resolve(ctx, ref)
	if err != nil {
		return nil, pullError(err)
	}
	id := pulledID(ref, res)
	if e, err := m.cat.Lookup(id); err == nil && e.Err == nil && e.SHA256 == res.Files[0].SHA256 {
		return e, nil
	}
	// Every name in the folder comes from the user's reference (checked by ParseRef) or from the
	// endpoint (the revision, checked by Resolve); check the result once more, since a folder
	// outside the models folder would let a download replace any file of the user's.
	if !safeElement(res.Revision) {
		return nil, pullError(fmt.Errorf("pull %s: revision %q is not a folder name: %w", ref.Repo, res.Revision, hf.ErrBadAnswer))
	}
	dir := filepath.Join(m.cat.Dir(), "hf", filepath.FromSlash(ref.Repo), res.Revision)
	if !m.cat.owns(dir) {
		return nil, pullError(fmt.Errorf("pull %s: %s is outside the models folder %s: %w", ref.Repo, dir, m.cat.Dir(), hf.ErrBadAnswer))
	}
	paths, err := client.Download(ctx, res, dir, func(p hf.Progress) {
		if progress != nil {
			progress(p)
		}
		m.events.publish(Event{Kind: EventPull, Model: id, Status: p.Status, Total: p.Total, Completed: p.Completed})
	})
	if err != nil {
		return nil, pullError(err)
	}
	e, err := m.cat.Register(ctx, Record{
		ID: id, Path: paths[0], Source: SourceHuggingFace,
		Repo: ref.Repo, File: res.Files[0].Path, Revision: res.Revision, SHA256: res.Files[0].SHA256,
	})
	if err != nil {
		if errors.Is(err, ErrNotModel) {
			for _, p := range paths {
				os.Remove(p)
			}
			return nil, fmt.Errorf("%w: %s downloaded but is not a usable GGUF model, so it was not registered: %v", llm.ErrInvalidInput, res.Files[0].Path, err)
		}
		return nil, err
	}
	m.events.publish(Event{Kind: EventCatalog, Model: id})
	return e, nil
}

// safeElement reports whether s can be one folder name: not empty, ".", "..", a path or anything
// with a separator or a control character.
func safeElement(s string) bool {
	if s == "" || s == "." || s == ".." || strings.ContainsAny(s, `/\:`) || !filepath.IsLocal(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// pulledID is the catalog id of a pull, as Ollama names Hugging Face models:
// hf.co/OWNER/REPO:QUANT.
func pulledID(ref hf.Ref, res *hf.Resolved) string {
	quant := res.Quant()
	if quant == "" {
		quant = strings.TrimSuffix(filepath.Base(res.Files[0].Path), ".gguf")
	}
	return "hf.co/" + ref.Repo + ":" + quant
}

// pullError makes Hub errors the dialects' kinds: what the user asked for is wrong (400/404),
// or the server could not do it (500).
func pullError(err error) error {
	switch {
	case errors.Is(err, hf.ErrNotFound):
		return fmt.Errorf("%w: %v", llm.ErrModelNotFound, err)
	case errors.Is(err, hf.ErrNoMatch), errors.Is(err, hf.ErrBadRef), errors.Is(err, hf.ErrNotHuggingFace), errors.Is(err, hf.ErrUnauthorized):
		return fmt.Errorf("%w: %v", llm.ErrInvalidInput, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	default:
		return fmt.Errorf("%w: pull: %v", llm.ErrEngineFailure, err)
	}
}
