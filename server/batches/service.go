// Package batches serves the Files and Batches APIs: uploads kept on disk with their rows in
// the store (quota, expiry, the sweep after a crash), and the batch runner, which checks a
// batch's JSONL input, runs its lines through the same core calls as HTTP requests (each as a
// core.AsBatchLine request: background priority, the share of the model's lanes the core
// hands batch lines), as the API key that made the batch (owners.go), and writes the output
// and error files. The dialect that serves a line's url says how to run it (ServeBatchLines).
// It is built on the core's public calls; the core knows nothing of it.
package batches

import (
	"context"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/store"
)

// Config says where files are kept and bounds the batch runner.
type Config struct {
	// Files is where uploads are kept, and how many bytes for how long.
	Files FilesConfig
	// Batches bounds the batch runner.
	Batches BatchConfig
	// Owner looks up the API key a batch was made with (by its id), for its lines to run as
	// that key; a key that was revoked or is gone is an error wrapping ErrOwnerNotFound. A
	// batch whose key cannot be looked up (nil, or an error) fails instead of running
	// (owners.go).
	Owner func(ctx context.Context, id string) (*auth.Identity, error)
	// AdmitLine, when set, admits each line before it runs, in its owner's context (team
	// mode's token quotas: the HTTP limits never see a batch line). It returns the context the
	// line runs with and what to call once the line's record is made; a refusal fails the line
	// with the error's code (an llm.StatusError's, e.g. quota_exceeded) and message.
	AdmitLine func(ctx context.Context) (context.Context, func(), error)
}

// Service is the files store and the batch runner over one core.
type Service struct {
	cfg   Config
	core  *core.Service
	store *store.Store // nil keeps nothing: no files, no batches
	// runner is the batch runner (batchrun.go).
	runner batchRunner
	// quota holds what uploads in progress have reserved of --files-max-bytes (files.go).
	quota fileQuota
}

// New builds the files store and batch runner over svc, keeping rows in st. Nothing runs in
// the background until StartBackground.
func New(cfg Config, svc *core.Service, st *store.Store) *Service {
	return &Service{cfg: cfg, core: svc, store: st}
}
