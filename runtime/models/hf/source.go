package hf

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models/source"
)

// SourceName is the catalog's source of a model pulled from the Hub.
const SourceName = "huggingface"

// Source is the Hub as one of the manager's model sources (source.Source): references in
// Ollama's and the Hub's syntax (ParseRef), files pinned to a commit, downloads resumed and
// verified by sha256, models named hf.co/OWNER/REPO:QUANT and kept in hf/OWNER/REPO/COMMIT.
type Source struct{ client *Client }

// NewSource is a Source over a new Client.
func NewSource(cfg Config) *Source { return &Source{client: New(cfg)} }

// Client is the Hub client the source pulls with.
func (s *Source) Client() *Client { return s.client }

// Name is SourceName.
func (s *Source) Name() string { return SourceName }

// Parse is ParseRef; a name without OWNER/REPO (ErrNotHuggingFace) also wraps
// source.ErrNotReference.
func (s *Source) Parse(reference string) (source.Reference, error) {
	r, err := ParseRef(reference)
	if errors.Is(err, ErrNotHuggingFace) {
		return source.Reference{}, notReference{err}
	}
	if err != nil {
		return source.Reference{}, err
	}
	return source.Reference{Source: SourceName, Repo: r.Repo, Quant: r.Quant, File: r.File, Revision: r.Revision}, nil
}

// notReference is a name the Hub does not pull, in ParseRef's words.
type notReference struct{ err error }

func (e notReference) Error() string   { return e.err.Error() }
func (e notReference) Unwrap() []error { return []error{e.err, source.ErrNotReference} }

// Resolve is Client.Resolve. Every name in the folder it answers comes from the user's
// reference (checked by ParseRef) or from the endpoint (the revision, checked by
// Client.Resolve); the revision is checked once more, since a folder outside the models folder
// would let a download replace any file of the user's.
func (s *Source) Resolve(ctx context.Context, ref source.Reference) (*source.Resolved, error) {
	r := Ref{Repo: ref.Repo, Quant: ref.Quant, File: ref.File, Revision: ref.Revision}
	res, err := s.client.Resolve(ctx, r)
	if err != nil {
		return nil, sourceError(err)
	}
	if !safeElement(res.Revision) {
		return nil, sourceError(fmt.Errorf("pull %s: revision %q is not a folder name: %w", r.Repo, res.Revision, ErrBadAnswer))
	}
	files := make([]source.File, len(res.Files))
	for i, f := range res.Files {
		files[i] = source.File{Path: f.Path, Size: f.Size, SHA256: f.SHA256}
	}
	out := &source.Resolved{Ref: ref, ID: pulledID(res), Revision: res.Revision,
		Folder: path.Join("hf", r.Repo, res.Revision), Files: files}
	if p := res.Projector; p != nil {
		out.Projector = &source.File{Path: p.Path, Size: p.Size, SHA256: p.SHA256}
	}
	return out, nil
}

// Download is Client.Download of what Resolve answered: the model's files, then its projector.
func (s *Source) Download(ctx context.Context, r *source.Resolved, dir string, progress func(source.Progress)) ([]string, error) {
	res := &Resolved{Ref: Ref{Repo: r.Ref.Repo, Quant: r.Ref.Quant, File: r.Ref.File, Revision: r.Ref.Revision}, Revision: r.Revision}
	for _, f := range r.Files {
		res.Files = append(res.Files, RemoteFile{Path: f.Path, Size: f.Size, SHA256: f.SHA256})
	}
	if p := r.Projector; p != nil { // last, as the Source contract says
		res.Files = append(res.Files, RemoteFile{Path: p.Path, Size: p.Size, SHA256: p.SHA256})
	}
	paths, err := s.client.Download(ctx, res, dir, progress)
	if err != nil {
		return nil, sourceError(err)
	}
	return paths, nil
}

// pulledID is the catalog id of a pull, as Ollama names Hugging Face models:
// hf.co/OWNER/REPO:QUANT; hf.co/OWNER/REPO/PATH.gguf when that quant names several of the
// repository's models (two pulls of them would otherwise share one id).
func pulledID(res *Resolved) string {
	if res.name != "" {
		return res.name
	}
	quant := res.Quant()
	if quant == "" {
		quant = strings.TrimSuffix(filepath.Base(res.Files[0].Path), ".gguf")
	}
	return "hf.co/" + res.Ref.Repo + ":" + quant
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

// sourceError makes Hub errors the kinds source.Source promises: what the user asked for is
// wrong (400/404), or the server could not do it (500).
func sourceError(err error) error {
	switch {
	case errors.Is(err, ErrNotFound):
		return fmt.Errorf("%w: %v", llm.ErrModelNotFound, err)
	case errors.Is(err, ErrNoMatch), errors.Is(err, ErrBadRef), errors.Is(err, ErrNotHuggingFace), errors.Is(err, ErrUnauthorized):
		return fmt.Errorf("%w: %v", llm.ErrInvalidInput, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, ErrDiskFull):
		// The server could not do it, but the message is the user's to act on: no prefix.
		return kindError{kind: llm.ErrEngineFailure, err: err}
	default:
		return fmt.Errorf("%w: pull: %v", llm.ErrEngineFailure, err)
	}
}

// kindError is err, reading as it does, that is also of kind (an llm sentinel).
type kindError struct{ kind, err error }

func (e kindError) Error() string   { return e.err.Error() }
func (e kindError) Unwrap() []error { return []error{e.kind, e.err} }
