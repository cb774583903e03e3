package servertest

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/runtime/models/hf"
	"github.com/superfluid/superfluid/runtime/models/hf/hftest"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/store"
)

// Catalog is a catalog-backed core for dialect tests: a real store, catalog and model manager,
// a fake Hugging Face Hub, and fake workers (the fake engine) instead of llama.cpp.
type Catalog struct {
	Svc   *core.Service
	Mgr   *models.Manager
	Store *store.Store
	Hub   *hftest.Server
	// Dir holds the models the test registers (outside the models folder).
	Dir string

	mu         sync.Mutex
	runners    map[string]*Runner // by model path
	startCheck func(e *models.Entry) error
}

// Reply is what every fake worker generates.
const Reply = "Once upon a time"

// NewCatalog builds a catalog-backed core; cfg's NewRunner and Crashed are filled in.
func NewCatalog(t *testing.T, cfg models.Config) *Catalog {
	t.Helper()
	st := Store(t)
	dir := t.TempDir()
	cat, err := models.OpenCatalog(context.Background(), st, filepath.Join(dir, "data", "models"))
	if err != nil {
		t.Fatal(err)
	}
	c := &Catalog{Store: st, Dir: dir, runners: map[string]*Runner{}, Hub: hftest.New()}
	t.Cleanup(c.Hub.Close)
	cfg.NewRunner = func(e *models.Entry, vocabOnly bool) models.Runner {
		r := &Runner{Engine: enginetest.New(512, Reply), check: func() error { return c.checkStart(e) }}
		if !vocabOnly {
			c.mu.Lock()
			c.runners[e.Path] = r
			c.mu.Unlock()
		}
		return r
	}
	if cfg.MemoryBudget == 0 {
		cfg.MemoryBudget = 1 << 40
	}
	c.Mgr = models.NewManager(cat, cfg)
	t.Cleanup(func() { c.Mgr.Close() })
	hub := hf.NewSource(hf.Config{Endpoint: c.Hub.URL(), Backoff: 1, StallTimeout: 0})
	cat.NameBy(hub)
	// Only the CPU runtime exists here.
	checkRuntime := func(name string) error {
		if name != "cpu" {
			return fmt.Errorf("there is no %s runtime; installed: cpu", name)
		}
		return nil
	}
	c.Svc = core.NewCatalog(core.Config{CheckRuntime: checkRuntime}, st, c.Mgr, hub)
	return c
}

// SetStartCheck makes every fake worker ask check before it loads; an error fails the load,
// as a worker that cannot load its file fails it (e.g. the strict GGUF reader on a file broken
// behind the catalog's back).
func (c *Catalog) SetStartCheck(check func(e *models.Entry) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.startCheck = check
}

func (c *Catalog) checkStart(e *models.Entry) error {
	c.mu.Lock()
	check := c.startCheck
	c.mu.Unlock()
	if check == nil {
		return nil
	}
	return check(e)
}

// AddModel writes a tiny llama GGUF named id.gguf and registers it under id.
func (c *Catalog) AddModel(t *testing.T, id string, opts gguftest.TinyLlamaOptions) *models.Entry {
	t.Helper()
	path := filepath.Join(c.Dir, id+".gguf")
	if err := gguftest.WriteTinyLlama(path, opts); err != nil {
		t.Fatal(err)
	}
	e, err := c.Mgr.Catalog().AddLocal(context.Background(), path, id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TinyModel is the bytes of a tiny llama GGUF, for the fake Hub.
func TinyModel(t *testing.T, opts gguftest.TinyLlamaOptions) []byte {
	t.Helper()
	w, err := gguftest.NewTinyLlama(opts)
	if err != nil {
		t.Fatal(err)
	}
	var b bytesBuffer
	if _, err := w.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.data
}

type bytesBuffer struct{ data []byte }

func (b *bytesBuffer) Write(p []byte) (int, error) { b.data = append(b.data, p...); return len(p), nil }

// Runner returns the fake worker of the model at path (nil before the model was first used).
func (c *Catalog) Runner(path string) *Runner {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runners[path]
}

// Runner is a fake worker: the fake engine plus load accounting.
type Runner struct {
	*enginetest.Engine
	Starts, Unloads atomic.Int32
	loaded          atomic.Bool
	check           func() error // see Catalog.SetStartCheck

	mu       sync.Mutex
	released []string // ReleaseAdapter's paths
}

// Start loads the model.
func (r *Runner) Start(context.Context) error {
	if r.check != nil {
		if err := r.check(); err != nil {
			return fmt.Errorf("%w: %v", llm.ErrEngineFailure, err)
		}
	}
	if !r.loaded.Swap(true) {
		r.Starts.Add(1)
	}
	return nil
}

// Unload frees it.
func (r *Runner) Unload(context.Context) error {
	if r.loaded.Swap(false) {
		r.Unloads.Add(1)
	}
	return nil
}

// Loaded reports whether the model is loaded.
func (r *Runner) Loaded() bool { return r.loaded.Load() }

// Slots is an empty snapshot.
func (r *Runner) Slots(context.Context) (llm.Slots, error) { return llm.Slots{}, nil }

// ReleaseAdapter records a release of the LoRA adapter at path (llm.AdapterReleaser).
func (r *Runner) ReleaseAdapter(_ context.Context, path string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.released = append(r.released, path)
	return nil
}

// Released are the adapter paths ReleaseAdapter was asked to free, in order.
func (r *Runner) Released() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.released...)
}
