package tray

import "context"

// Suggestion is the first download the welcome offers: the largest quantization of a small,
// well-known model that fits this machine with room to spare.
type Suggestion struct {
	// Reference is what Pull takes (hf.co/OWNER/REPO:QUANT); "" when nothing is suggested.
	Reference string
	// Name is the model as people know it ("Qwen3 1.7B"), Quant its quantization.
	Name, Quant string
	// Size is the file's size; Need the memory it takes loaded, Free what this machine has.
	Size, Need, Free int64
	// Note says why nothing is suggested (offline, nothing fits); "" with a Reference.
	Note string
}

// FirstRunController is what the welcome screen shows and changes: whether this is a fresh
// install, where models are stored (and moving them), and the first download to suggest.
type FirstRunController interface {
	// FirstRun reports whether the welcome has not been dismissed yet (a fresh install);
	// SetWelcomed remembers that it was, so it does not open at the next start.
	FirstRun() bool
	SetWelcomed() error
	// ModelsDir is the folder downloads and the bundled model are stored in.
	ModelsDir() string
	// MoveModels moves the models the catalog owns into dir and stores models there from now
	// on (and at the next start); progress reports the bytes copied when dir is on another
	// disk. It refuses while a model is loaded or a download runs.
	MoveModels(ctx context.Context, dir string, progress func(done, total int64)) error
	// Suggestion is the first download that fits this machine, or a Note saying why there is
	// none; an error only when it cannot tell at all.
	Suggestion(ctx context.Context) (Suggestion, error)
	// PendingPulls names the downloads that were running when the app last quit; the app
	// starts each again with Pull, which resumes its partial file.
	PendingPulls() []string
}
