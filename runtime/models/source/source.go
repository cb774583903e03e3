// Package source is the contract between the model manager and the places models are pulled
// from: Hugging Face today (runtime/models/hf), a local folder, an S3 bucket or another
// superfluid's catalog tomorrow. A Source parses the references it understands, resolves one to
// the files it names (pinned to one revision) and downloads them with progress; the manager
// (runtime/models, Manager.Pull) picks the folder, registers the model and tells its
// subscribers. The package imports nothing of the house, so a source implements it without
// importing the manager.
package source

import (
	"context"
	"errors"
)

// Source is one place models are pulled from.
type Source interface {
	// Name is what the catalog records as the model's source ("huggingface").
	Name() string
	// Parse reads a reference in the source's syntax. A name that is not this source's kind of
	// reference (an Ollama library name for Hugging Face) wraps ErrNotReference; one that is but
	// is malformed or unsafe returns another error, in the user's terms.
	Parse(reference string) (Reference, error)
	// Resolve lists ref's files and picks the ones it names, pinned to one revision. Errors
	// about what the user asked for (no such repository: llm.ErrModelNotFound; no such file,
	// no access: llm.ErrInvalidInput) wrap those kinds; the rest wrap llm.ErrEngineFailure,
	// except a context's end, returned as it is.
	Resolve(ctx context.Context, ref Reference) (*Resolved, error)
	// Download fetches r's files into dir (resuming what an interrupted call left, verifying
	// each), reporting progress, and returns their paths in r.Files order, then the
	// projector's when r.Projector is set. Errors are as Resolve's.
	Download(ctx context.Context, r *Resolved, dir string, progress func(Progress)) ([]string, error)
}

// ErrNotReference reports a name that no source pulls.
var ErrNotReference = errors.New("not a model reference")

// ErrUnsafe reports an answer that would put files outside the models folder.
var ErrUnsafe = errors.New("the source sent an answer that is not safe to use")

// Reference is a model reference a user typed, as its source reads it.
type Reference struct {
	Source   string // the Source's Name
	Repo     string // the repository ("OWNER/REPO")
	Quant    string // the quantization asked for ("Q4_K_M"), "" for the default
	File     string // a file inside the repository, "" when not given
	Revision string // "" for the default revision
}

// File is one file a reference resolved to.
type File struct {
	Path   string // path inside the repository
	Size   int64
	SHA256 string // lower-case hex; "" when the source does not know it before the download
}

// Resolved is a reference resolved to the files to download.
type Resolved struct {
	Ref Reference
	// ID is the catalog id the model gets ("hf.co/OWNER/REPO:QUANT").
	ID string
	// Revision is the revision the files come from (a commit when the source pins one).
	Revision string
	// Folder is where the files go, relative to the models folder and slash-separated
	// ("hf/OWNER/REPO/COMMIT"); the manager refuses one that leaves it.
	Folder string
	// Files are the model's file first, then the other parts of a split model in part order.
	Files []File
	// Projector is the multimodal projector (mmproj) file that goes with the model, nil for
	// none; it is downloaded into the same folder.
	Projector *File
}

// Progress reports one file's download.
type Progress struct {
	File      string // the file's path inside the repository
	Digest    string // "sha256:<hex>"; "" until known
	Status    string // StatusPulling, StatusVerifying or StatusDone
	Total     int64  // bytes
	Completed int64  // bytes
}

// Progress statuses.
const (
	StatusPulling   = "pulling"
	StatusVerifying = "verifying"
	StatusDone      = "done"
)
