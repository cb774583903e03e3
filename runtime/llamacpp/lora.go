package llamacpp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/llm"
)

// LoRA adapters (llm.Request.Adapters). An adapter file is loaded for the model on first use
// and kept, by path, until ReleaseAdapter. llama.cpp applies adapters to a whole context, not
// to a sequence, so each tick decodes the busy lanes in groups, one llama_decode per distinct
// adapter set (tickSets). A lane's cache partition names its job's set (partition), so a prefix
// computed under one set is never reused, copied or restored from disk under another.

// loraAdapter is one adapter file loaded for the engine's model.
type loraAdapter struct {
	path string
	// identity is what KV computed under the adapter depends on: the file (path, size and
	// modification time, as for the model in kvSettings). A reload of the same file has the
	// same identity; instance tells loads apart.
	identity string
	instance uint64
	handle   loraHandle
	// pairs is the number of tensors it changes: each adds ops to a decode's graph.
	pairs int
	// holds counts the generations running with it (from Generate to its return); retired
	// says ReleaseAdapter was called. Both under loraState.mu.
	holds   int
	retired bool
}

// loraState is the engine's adapters. Generate loads and holds them; the loop applies them and
// frees the retired ones.
type loraState struct {
	mu      sync.Mutex
	loaded  map[string]*loraAdapter // by path
	retired []*loraAdapter          // released, freed by the loop once no generation holds them
	// loadMu serializes loads, outside mu: a big adapter's load never blocks the loop.
	loadMu    sync.Mutex
	instances uint64
	loads     int // adapter files loaded, for tests
	// tensors is the model's tensor count (checkGraphRoom), read with the first adapter.
	tensors int
	frees   int // adapters freed, for tests
	// wake tells the loop a retired adapter may be free to go.
	wake chan struct{}
	// mixedTicks counts ticks that decoded more than one adapter set, for tests.
	mixedTicks atomic.Int64

	// Only the loop touches the rest.
	applied    string      // the adapterSet.context of the set the context computes with
	appliedSet *adapterSet // and the set itself (nil: none)
	embeddings bool        // the context's embeddings flag (setContextAdapters)
	decoded    bool        // the flag the last llama_decode ran with
	turn       int         // which set goes first next tick
}

// init readies the state; the engine's context starts with embeddings on (ollama's llama
// package creates every context so).
func (s *loraState) init() {
	s.loaded, s.wake, s.embeddings, s.decoded = map[string]*loraAdapter{}, make(chan struct{}, 1), true, true
}

// adapterSet is the adapters one generation runs with, sorted by path, at their scales.
type adapterSet struct {
	adapters []*loraAdapter
	scales   []float32
	// key names the set in cache partitions: the adapters' identities and scales. context
	// names the loaded instances and scales the context must have applied.
	key, context string
}

// maxAdapterScale bounds an adapter's scale, as the contract bounds it at load (the core
// checks it too): the engine applies it as a float32, and far smaller scales than float32's
// overflow already turn every logit NaN, which reads as a broken model.
const maxAdapterScale = 100

// partitionMark starts the adapter part of a cache partition (llm.Request.CachePartition is
// the core's, an owner's name, and holds no NUL).
const partitionMark = "\x00lora"

// partition is the cache partition of a job of the request's partition running with set.
func (s *adapterSet) partition(owner string) string {
	if s == nil {
		return owner
	}
	return owner + partitionMark + s.key
}

// partitionAdapters is the adapter part of a partition ("" for the bare model).
func partitionAdapters(partition string) string {
	_, adapters, _ := strings.Cut(partition, partitionMark)
	return adapters
}

// adaptersFor checks and loads req's adapters and returns the set the job runs with (nil for
// the bare model: no adapters, or only ones at scale 0), held until releaseSet.
func (e *Engine) adaptersFor(ctx context.Context, req *llm.Request) (*adapterSet, error) {
	if len(req.Adapters) == 0 {
		return nil, nil
	}
	scales := map[string]float64{}
	ids := map[string]string{}
	for i, ref := range req.Adapters {
		name := ref.ID
		if name == "" {
			name = strconv.Itoa(i)
		}
		switch {
		case math.IsNaN(ref.Scale) || math.IsInf(ref.Scale, 0):
			return nil, fmt.Errorf("%w: adapter %s: scale %v is not a finite number (1 applies the adapter as trained, 0 turns it off)", llm.ErrInvalidInput, name, ref.Scale)
		case ref.Path == "":
			return nil, fmt.Errorf("%w: adapter %s has no file (load it with POST /v1/lora/load)", llm.ErrInvalidInput, name)
		case math.Abs(ref.Scale) > maxAdapterScale:
			return nil, fmt.Errorf("%w: adapter %s: scale %v is outside -%d to %d (1 applies the adapter as trained)", llm.ErrInvalidInput, name, ref.Scale, maxAdapterScale, maxAdapterScale)
		}
		// One file named twice applies once, at the sum of its scales (the delta is linear).
		scales[ref.Path] += ref.Scale
		if ids[ref.Path] == "" {
			ids[ref.Path] = name
		}
	}
	paths := make([]string, 0, len(scales))
	for p, s := range scales {
		if math.Abs(s) > maxAdapterScale {
			return nil, fmt.Errorf("%w: adapter %s is named more than once at scales that add up to %v, outside -%d to %d", llm.ErrInvalidInput, ids[p], s, maxAdapterScale, maxAdapterScale)
		}
		if s != 0 {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return nil, nil
	}
	slices.Sort(paths)
	set := &adapterSet{}
	var key, context strings.Builder
	for _, p := range paths {
		a, err := e.acquireAdapter(ctx, ids[p], p)
		if err != nil {
			e.releaseSet(set)
			return nil, err
		}
		scale := float32(scales[p])
		set.adapters = append(set.adapters, a)
		set.scales = append(set.scales, scale)
		fmt.Fprintf(&key, "\x00%s scale=%v", a.identity, scale)
		fmt.Fprintf(&context, "%d@%v ", a.instance, scale)
	}
	set.key, set.context = key.String(), context.String()
	if err := e.checkGraphRoom(set, ids); err != nil {
		e.releaseSet(set)
		return nil, err
	}
	return set, nil
}

// acquireAdapter returns the adapter at path, loading it when it is not loaded, and holds it.
func (e *Engine) acquireAdapter(ctx context.Context, id, path string) (*loraAdapter, error) {
	s := &e.lora
	if a := s.hold(path); a != nil {
		return a, nil
	}
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	if a := s.hold(path); a != nil {
		return a, nil // another generation loaded it meanwhile
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	a, err := e.loadAdapter(id, path)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.instances++
	a.instance = s.instances
	a.holds = 1
	s.loaded[path] = a
	s.loads++
	s.mu.Unlock()
	return a, nil
}

// hold takes a hold on the loaded adapter at path, or returns nil when none is loaded.
func (s *loraState) hold(path string) *loraAdapter {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.loaded[path]
	if a != nil {
		a.holds++
	}
	return a
}

// loadAdapter checks the file at path against the model, from the headers (llama.cpp's own
// refusals only reach its log), and loads it.
func (e *Engine) loadAdapter(id, path string) (*loraAdapter, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: adapter %s: %v", llm.ErrInvalidInput, id, err)
	}
	model, err := gguf.ReadParts(e.info.Path)
	if err != nil {
		return nil, fmt.Errorf("%w: read the model %s to check adapter %s: %v", llm.ErrEngineFailure, e.info.Path, id, err)
	}
	file, err := gguf.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: adapter %s: %v", llm.ErrInvalidInput, id, err)
	}
	if err := gguf.FitAdapter(model, file); err != nil {
		return nil, adapterMismatch(id, path, e.info.Path, model[0], file, err)
	}
	facts, _ := file.Adapter() // FitAdapter checked it
	tensors := 0
	for _, part := range model {
		tensors += len(part.Tensors)
	}
	e.lora.mu.Lock()
	e.lora.tensors = tensors
	e.lora.mu.Unlock()
	e.modelMu.RLock()
	defer e.modelMu.RUnlock()
	if e.closed {
		return nil, errClosed
	}
	h := loraInit(e.model, path)
	if h == nil {
		return nil, fmt.Errorf("%w: llama.cpp could not load adapter %s (%s) for the model %s (the worker's log says why)",
			llm.ErrInvalidInput, id, path, e.info.Path)
	}
	return &loraAdapter{
		path:     path,
		identity: fmt.Sprintf("%q size=%d mtime=%d", path, st.Size(), st.ModTime().UnixNano()),
		handle:   h,
		pairs:    facts.Tensors,
	}, nil
}

// adapterMismatch says why the adapter does not fit the model, naming both; when their widths
// differ it leads with them, the usual cause (an adapter trained for another model).
func adapterMismatch(id, path, modelPath string, model, adapter *gguf.File, err error) error {
	arch := model.Architecture()
	width, _ := model.Uint(arch + ".embedding_length")
	if aw := adapterWidth(adapter); aw != 0 && width != 0 && aw != width && errors.Is(err, gguf.ErrMismatch) {
		return fmt.Errorf("%w: adapter %s (%s) is for %s n_embd %d; model %s is %s n_embd %d",
			llm.ErrInvalidInput, id, path, adapter.Architecture(), aw, modelPath, arch, width)
	}
	return fmt.Errorf("%w: adapter %s (%s) does not fit the model %s: %v", llm.ErrInvalidInput, id, path, modelPath, err)
}

// adapterWidth is the embedding width an adapter was made for: the input length of its factors
// of a block's attention query or feed-forward up projection (0 when it has neither).
func adapterWidth(f *gguf.File) uint64 {
	for _, t := range f.Tensors {
		if (strings.HasSuffix(t.Name, ".attn_q.weight.lora_a") || strings.HasSuffix(t.Name, ".ffn_up.weight.lora_a")) && len(t.Dims) == 2 {
			return t.Dims[0]
		}
	}
	return 0
}

// releaseSet drops the holds adaptersFor took.
func (e *Engine) releaseSet(set *adapterSet) {
	if set == nil {
		return
	}
	s := &e.lora
	s.mu.Lock()
	wake := false
	for _, a := range set.adapters {
		a.holds--
		wake = wake || (a.retired && a.holds == 0)
	}
	s.mu.Unlock()
	if wake {
		s.notify()
	}
}

func (s *loraState) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// ReleaseAdapter frees the adapter at path once no generation runs with it
// (llm.AdapterReleaser); a later request naming it loads it again. Idle lanes holding
// prefixes computed under it are dropped then. Releasing an adapter that is not loaded does
// nothing.
func (e *Engine) ReleaseAdapter(ctx context.Context, path string) error {
	s := &e.lora
	s.mu.Lock()
	a := s.loaded[path]
	if a != nil {
		delete(s.loaded, path)
		a.retired = true
		s.retired = append(s.retired, a)
	}
	s.mu.Unlock()
	if a != nil {
		s.notify()
	}
	return nil
}
