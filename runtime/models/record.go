package models

import (
	"context"
	"errors"
	"time"
)

// The catalog's persistence. The catalog says what it keeps (Record) and what it needs of a
// store (RecordStore); server/store's SQLite holds the rows and app wires the two, so no
// runtime package depends on a server package.

// Model sources.
const (
	SourceLocal       = "local"
	SourceHuggingFace = "huggingface"
	SourceBundled     = "bundled"
	SourceAlias       = "alias"
)

// Record is what the catalog keeps of one model.
type Record struct {
	ID   string
	Path string // absolute path of the GGUF file (the first part of a split model)
	// Source is SourceLocal, SourceHuggingFace, SourceBundled or SourceAlias.
	Source string
	// Repo, File and Revision locate a Hugging Face pull; SHA256 is the verified digest of File.
	Repo, File, Revision, SHA256 string
	// AliasOf is the model an alias (an /api/copy) was copied from.
	AliasOf        string
	Size           int64 // bytes on disk, all parts
	Architecture   string
	ParameterCount int64
	Quantization   string
	ContextLength  int
	Capabilities   []string
	AddedAt        time.Time
	LastUsedAt     time.Time // zero until first used
	// Projector is the multimodal projector (mmproj) GGUF the model loads beside it, "" for
	// none; Capabilities then names what it encodes ("vision", "audio").
	Projector string
	// Kind is KindModel ("") or KindAdapter: a LoRA adapter, never loaded as a model, applied
	// to BaseModel (a catalog id; "" when not known).
	Kind      string
	BaseModel string
}

// Record kinds.
const (
	KindModel   = ""
	KindAdapter = "adapter"
)

// ErrNoRecord is what a RecordStore's DeleteModel wraps for an id it does not hold.
var ErrNoRecord = errors.New("no such model record")

// RecordStore keeps the catalog's records.
type RecordStore interface {
	// PutModel inserts r, or replaces the record with the same id.
	PutModel(ctx context.Context, r Record) error
	// Models lists every record.
	Models(ctx context.Context) ([]Record, error)
	// DeleteModel removes the record with the given id (an id it does not hold: ErrNoRecord).
	DeleteModel(ctx context.Context, id string) error
	// TouchModel sets a record's last-used time.
	TouchModel(ctx context.Context, id string, t time.Time) error
}
