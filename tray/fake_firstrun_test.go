package tray

import (
	"context"
	"errors"
	"sync"
)

// fakeFirstRun is the fake's first-run state: whether the welcome was dismissed, the models
// folder, the suggestion it offers and what a move does.
type fakeFirstRun struct {
	mu         sync.Mutex
	welcomed   bool
	dir        string
	suggestion Suggestion
	suggestErr error
	moveErr    error    // MoveModels fails with it (after half the progress)
	moved      []string // the folders MoveModels was asked for
	pending    []string // PendingPulls: downloads left running at the last quit
}

func newFakeFirstRun() *fakeFirstRun {
	return &fakeFirstRun{dir: "/home/ann/.local/share/superfluid/models",
		suggestion: Suggestion{Reference: "hf.co/unsloth/Qwen3-1.7B-GGUF:Q4_K_M", Name: "Qwen3 1.7B", Quant: "Q4_K_M",
			Size: 1107 << 20, Need: 1500 << 20, Free: 12 << 30}}
}

func (f *fakeController) firstRun() *fakeFirstRun {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.first == nil {
		f.first = &fakeFirstRun{welcomed: true, dir: "/data/models", suggestion: Suggestion{Note: "Offline."}}
	}
	return f.first
}

func (f *fakeController) FirstRun() bool {
	r := f.firstRun()
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.welcomed
}

func (f *fakeController) SetWelcomed() error {
	r := f.firstRun()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.welcomed = true
	return nil
}

func (f *fakeController) ModelsDir() string {
	r := f.firstRun()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dir
}

func (f *fakeController) MoveModels(ctx context.Context, dir string, progress func(done, total int64)) error {
	r := f.firstRun()
	r.mu.Lock()
	r.moved = append(r.moved, dir)
	err := r.moveErr
	r.mu.Unlock()
	progress(50, 100)
	if err != nil {
		return err
	}
	progress(100, 100)
	r.mu.Lock()
	r.dir = dir
	r.mu.Unlock()
	return nil
}

func (f *fakeController) Suggestion(ctx context.Context) (Suggestion, error) {
	r := f.firstRun()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.suggestErr != nil {
		return Suggestion{}, r.suggestErr
	}
	return r.suggestion, nil
}

var errFakeFull = errors.New("the disk holding /mnt/small is full; free some space or choose another folder")

func (f *fakeController) PendingPulls() []string {
	r := f.firstRun()
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.pending...)
}
