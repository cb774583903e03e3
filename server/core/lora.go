package core

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models"
)

// LoRA adapters. Each model has a registry of the adapters an admin loaded for it
// (/v1/lora/load): they are active for every request that names none. A request that names
// adapters (the `lora` extension, Generation.Adapters) runs with exactly those: loaded ones,
// or catalog adapters of the model used on demand. The registry lives in the core, not in the
// worker, and every request carries its adapters' paths, so it survives a worker restart; it
// is not persisted (a restart of the server starts with none loaded).

// Adapter is a LoRA adapter of a model, as /v1/lora lists it.
type Adapter struct {
	// ID names it in requests (`lora: [{"id"}]`) and in /v1/lora/unload.
	ID string
	// Model is the id of the model it applies to.
	Model string
	// Path is the adapter's GGUF file.
	Path string
	// Scale is what a request that names no adapters runs it at.
	Scale float64
	// Active reports whether requests that name no adapters run with it: true for loaded
	// adapters; a catalog adapter of the model that is not loaded is listed inactive.
	Active bool
}

// AdapterError refuses the adapters a request named (an unknown id, a scale out of range):
// a dialect whose errors name a parameter names lora.
type AdapterError struct{ Err error }

func (e *AdapterError) Error() string { return e.Err.Error() }

func (e *AdapterError) Unwrap() error { return e.Err }

// Bounds of the registry and of one request.
const (
	// MaxAdapterScale bounds |scale|: far past any useful strength, short of overflowing.
	MaxAdapterScale = 100
	// MaxLoadedAdapters is how many adapters one model may have loaded at once.
	MaxLoadedAdapters = 32
)

// loraRegistry is the adapters loaded per model id, in load order. The zero value is empty.
type loraRegistry struct {
	mu      sync.Mutex
	byModel map[string][]Adapter
	// files is the model file each model id's adapters were checked against: an id that names
	// another file now, or a file changed since (the model deleted and another added under its
	// name, here or by a CLI beside the server), has its adapters dropped, never applied to a
	// model they may not fit.
	files map[string]modelFile
	// checked remembers the (model file, adapter file) pairs checkAdapter accepted, with the
	// files' sizes and times, so a request naming a catalog adapter reads no header twice.
	checked map[adapterPair]fileStamps
}

// modelFile is a model file as its adapters were checked against it.
type modelFile struct {
	path  string
	size  int64
	mtime time.Time
}

func modelFileOf(path string) modelFile {
	f := modelFile{path: path}
	if st, err := os.Stat(path); err == nil {
		f.size, f.mtime = st.Size(), st.ModTime()
	}
	return f
}

// currentLocked is m's list, after dropping one loaded for another file under m's id.
func (r *loraRegistry) currentLocked(m *Model) []Adapter {
	if f, ok := r.files[m.ID]; ok && f != modelFileOf(m.Path) {
		delete(r.byModel, m.ID)
		delete(r.files, m.ID)
	}
	return r.byModel[m.ID]
}

func (r *loraRegistry) list(m *Model) []Adapter {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.currentLocked(m))
}

func (r *loraRegistry) lookup(m *Model, id string) (Adapter, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	list := r.currentLocked(m)
	i := slices.IndexFunc(list, func(a Adapter) bool { return a.ID == id })
	if i < 0 {
		return Adapter{}, false
	}
	return list[i], true
}

// put loads a for m, replacing the adapter of the same id (a new scale or file).
func (r *loraRegistry) put(m *Model, a Adapter) (replaced *Adapter, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byModel == nil {
		r.byModel, r.files = map[string][]Adapter{}, map[string]modelFile{}
	}
	list := r.currentLocked(m)
	for i, have := range list {
		if have.ID != a.ID && have.Path == a.Path {
			return nil, fmt.Errorf("%w: the file %s is already loaded for the model %s as the adapter %q; unload it or load it under that id",
				llm.ErrInvalidInput, a.Path, a.Model, have.ID)
		}
		if have.ID == a.ID {
			old := have
			list[i] = a
			return &old, nil
		}
	}
	if len(list) >= MaxLoadedAdapters {
		return nil, fmt.Errorf("%w: the model %s has %d adapters loaded, the most it may have; unload one first", llm.ErrInvalidInput, a.Model, len(list))
	}
	r.byModel[m.ID], r.files[m.ID] = append(list, a), modelFileOf(m.Path)
	return nil, nil
}

// any is one loaded adapter, the first by model id; ok is false when none is loaded.
func (r *loraRegistry) any() (a Adapter, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := slices.Sorted(maps.Keys(r.byModel))
	for _, id := range ids {
		if list := r.byModel[id]; len(list) > 0 {
			return list[0], true
		}
	}
	return Adapter{}, false
}

// remove unloads m's adapter id ("" unloads them all) and returns what it removed.
func (r *loraRegistry) remove(m *Model, id string) []Adapter {
	r.mu.Lock()
	defer r.mu.Unlock()
	var gone, kept []Adapter
	for _, a := range r.currentLocked(m) {
		if id == "" || a.ID == id {
			gone = append(gone, a)
		} else {
			kept = append(kept, a)
		}
	}
	if len(kept) == 0 {
		delete(r.byModel, m.ID)
		delete(r.files, m.ID)
	} else {
		r.byModel[m.ID] = kept
	}
	return gone
}

// inUse reports whether any model still has the adapter file path loaded.
func (r *loraRegistry) inUse(path string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, list := range r.byModel {
		if slices.ContainsFunc(list, func(a Adapter) bool { return a.Path == path }) {
			return true
		}
	}
	return false
}

// LoadAdapter loads a LoRA adapter for model (an admin's call: the route checks it) and makes
// it active for requests that name no adapters. ref is the absolute path of a GGUF adapter on
// this machine or the id of a catalog adapter; id names it (default: the catalog id, else the
// file's base name); scale is its strength (1 as trained). The file is checked against the
// model's own: a LoRA GGUF for the same architecture with tensor shapes that fit.
func (s *Service) LoadAdapter(ctx context.Context, model, ref, id string, scale float64) (Adapter, error) {
	m, err := s.ModelFor(ctx, model)
	if err != nil {
		return Adapter{}, err
	}
	if err := adaptable(m); err != nil {
		return Adapter{}, err
	}
	if err := checkScale(scale, "scale"); err != nil {
		return Adapter{}, err
	}
	// A catalog adapter's file moves with the models folder: its path would be stale.
	done, err := s.GuardModels("the load of the adapter "+ref, "load the adapter")
	if err != nil {
		return Adapter{}, err
	}
	defer done()
	path, catalogID, err := s.adapterFile(m, ref)
	if err != nil {
		return Adapter{}, err
	}
	if id == "" {
		id = cmp.Or(catalogID, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
	}
	if err := checkAdapterID(id); err != nil {
		return Adapter{}, err
	}
	if err := s.checkAdapter(m, path); err != nil {
		return Adapter{}, err
	}
	a := Adapter{ID: id, Model: m.ID, Path: path, Scale: scale, Active: true}
	replaced, err := s.lora.put(m, a)
	if err != nil {
		return Adapter{}, err
	}
	if replaced != nil && replaced.Path != path {
		s.releaseAdapter(ctx, m, replaced.Path)
	}
	return a, nil
}

// UnloadAdapter unloads model's adapter id, or all of them when id is "", and returns what it
// unloaded. The engine frees an adapter's weights once no request runs with it.
func (s *Service) UnloadAdapter(ctx context.Context, model, id string) ([]Adapter, error) {
	m, err := s.ModelFor(ctx, model)
	if err != nil {
		return nil, err
	}
	gone := s.lora.remove(m, id)
	if id != "" && len(gone) == 0 {
		return nil, fmt.Errorf("%w: the model %s has no adapter %q loaded; GET /v1/lora?model=%s lists them", llm.ErrInvalidInput, m.ID, id, m.ID)
	}
	for i := range gone {
		gone[i].Active = false
		s.releaseAdapter(ctx, m, gone[i].Path)
	}
	return gone, nil
}

// Adapters lists model's adapters: the loaded ones (active) in load order, then the catalog
// adapters of the model that are not loaded (inactive). An empty model lists the loaded
// adapters of every model the caller may use.
func (s *Service) Adapters(ctx context.Context, model string) ([]Adapter, error) {
	if model == "" {
		var all []Adapter
		for _, m := range s.VisibleModels(ctx) {
			all = append(all, s.lora.list(m)...)
		}
		return all, nil
	}
	m, err := s.ModelFor(ctx, model)
	if err != nil {
		return nil, err
	}
	loaded := s.lora.list(m)
	out := slices.Clone(loaded)
	for _, e := range s.catalogAdapters(m) {
		if !slices.ContainsFunc(loaded, func(a Adapter) bool { return a.Path == e.Path || a.ID == e.ID }) {
			out = append(out, Adapter{ID: e.ID, Model: m.ID, Path: e.Path, Scale: 1})
		}
	}
	return out, nil
}

// resolveAdapters settles the adapters gen runs with on m: none named (nil) takes the model's
// active adapters; named ones (the `lora` extension) are looked up by id among the loaded
// adapters, then the catalog adapters of the model, and get their paths. An adapter at scale
// 0 is left out: it changes nothing, and leaving it out keeps the request's prefix cache
// shared with requests without it.
func (s *Service) resolveAdapters(m *Model, gen *llm.Request) error {
	if err := s.resolveNamed(m, gen); err != nil {
		return &AdapterError{Err: err}
	}
	return nil
}

func (s *Service) resolveNamed(m *Model, gen *llm.Request) error {
	if gen.Adapters == nil {
		for _, a := range s.lora.list(m) {
			if a.Scale != 0 {
				gen.Adapters = append(gen.Adapters, llm.AdapterRef{ID: a.ID, Path: a.Path, Scale: a.Scale})
			}
		}
		return nil
	}
	if len(gen.Adapters) > MaxRequestAdapters { // the dialects' parser refuses it first; this holds for other callers
		return fmt.Errorf("%w: lora names %d adapters; a request may name at most %d", llm.ErrInvalidInput, len(gen.Adapters), MaxRequestAdapters)
	}
	out := make([]llm.AdapterRef, 0, len(gen.Adapters)) // empty, not nil: the request asked for none
	for i, ref := range gen.Adapters {
		where := fmt.Sprintf("lora[%d]", i)
		if err := checkScale(ref.Scale, where+".scale"); err != nil {
			return err
		}
		if slices.ContainsFunc(gen.Adapters[:i], func(r llm.AdapterRef) bool { return r.ID == ref.ID }) {
			return fmt.Errorf("%w: %s names the adapter %q twice", llm.ErrInvalidInput, where, ref.ID)
		}
		path, err := s.requestAdapter(m, ref.ID, where)
		if err != nil {
			return err
		}
		if ref.Scale != 0 {
			out = append(out, llm.AdapterRef{ID: ref.ID, Path: path, Scale: ref.Scale})
		}
	}
	gen.Adapters = out
	return nil
}

// adaptersRecord is a request record's adapters: a JSON array of {"id", "scale"}, "" for
// none (paths stay out of the record: they are the machine's, not the request's).
func adaptersRecord(refs []llm.AdapterRef) string {
	if len(refs) == 0 {
		return ""
	}
	type entry struct {
		ID    string  `json:"id"`
		Scale float64 `json:"scale"`
	}
	out := make([]entry, len(refs))
	for i, r := range refs {
		out[i] = entry{r.ID, r.Scale}
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// requestAdapter is the file of the adapter id a request named on m.
func (s *Service) requestAdapter(m *Model, id, where string) (string, error) {
	if id == "" {
		return "", fmt.Errorf("%w: %s has no id; name a loaded adapter (GET /v1/lora?model=%s lists them)", llm.ErrInvalidInput, where, m.ID)
	}
	if a, ok := s.lora.lookup(m, id); ok {
		return a.Path, nil
	}
	for _, e := range s.catalogAdapters(m) {
		if e.ID == id {
			if err := s.checkAdapter(m, e.Path); err != nil {
				// Any key may name an adapter; only admins are shown where its file lies.
				msg := strings.TrimPrefix(err.Error(), llm.ErrInvalidInput.Error()+": ")
				return "", &baseNamed{err: err, msg: fmt.Sprintf("%s: the catalog adapter %q: %s", where, id, baseNames(msg, e.Path, m.Path))}
			}
			return e.Path, nil
		}
	}
	return "", fmt.Errorf("%w: %s: the model %s has no adapter %q; GET /v1/lora?model=%s lists its adapters, POST /v1/lora/load loads one",
		llm.ErrInvalidInput, where, m.ID, id, m.ID)
}

// adapterFile resolves a /v1/lora/load reference: an absolute path, or a catalog adapter's id
// (which it returns too).
func (s *Service) adapterFile(m *Model, ref string) (path, catalogID string, err error) {
	switch {
	case ref == "":
		return "", "", fmt.Errorf("%w: adapter is empty; give the absolute path of a LoRA GGUF file or a catalog adapter's id", llm.ErrInvalidInput)
	case filepath.IsAbs(ref):
		return filepath.Clean(ref), "", checkAdapterPath(ref)
	case looksLikePath(ref):
		return "", "", fmt.Errorf("%w: the adapter %q is a relative path; give the file's absolute path", llm.ErrInvalidInput, ref)
	}
	if err := models.CheckName(ref); err != nil {
		return "", "", err
	}
	if s.mgr != nil {
		e, err := s.mgr.Catalog().LookupAdapter(ref)
		switch {
		case err == nil:
			if e.BaseModel != "" && m.Entry != nil && e.BaseModel != m.Entry.ID && e.BaseModel != m.Entry.AliasOf {
				return "", "", fmt.Errorf("%w: the catalog adapter %s is an adapter of the model %s, not of %s", llm.ErrInvalidInput, e.ID, e.BaseModel, m.ID)
			}
			return e.Path, e.ID, nil
		case !errors.Is(err, llm.ErrModelNotFound):
			return "", "", err // a model's id, or a name that is no name
		}
	}
	return "", "", fmt.Errorf("%w: the adapter %q is neither an absolute path nor a catalog adapter; give the absolute path of a LoRA GGUF file",
		llm.ErrInvalidInput, ref)
}

// catalogAdapters are the catalog's usable adapter entries whose base model is m.
func (s *Service) catalogAdapters(m *Model) []*models.Entry {
	if s.mgr == nil || m.Entry == nil {
		return nil
	}
	var out []*models.Entry
	for _, e := range s.mgr.Catalog().Adapters(m.Entry.ID) {
		if e.Err == nil {
			out = append(out, e)
		}
	}
	return out
}

// releaseAdapter tells m's engine, when it is up and keeps adapters, that path is no longer
// wanted, unless another model still has it loaded.
func (s *Service) releaseAdapter(ctx context.Context, m *Model, path string) {
	r, ok := m.Engine.(llm.AdapterReleaser)
	if !ok || !m.Loaded() || s.lora.inUse(path) {
		return
	}
	if err := r.ReleaseAdapter(ctx, path); err != nil {
		// The registry no longer hands it out; the engine frees it with the model at the latest.
		slog.Warn("release adapter", "model", m.ID, "path", path, "err", err)
	}
}

// adaptable refuses adapters on a model that cannot take them.
func adaptable(m *Model) error {
	switch {
	case m.Requests != nil:
		return fmt.Errorf("%w: the model %s is served by another server (a forwarding engine); LoRA adapters apply to models this server runs", llm.ErrInvalidInput, m.ID)
	case m.Embedding() != nil:
		return fmt.Errorf("%w: the model %s is an embedding model; LoRA adapters apply to generation", llm.ErrInvalidInput, m.ID)
	}
	return nil
}

// checkScale refuses a scale that is not finite or past MaxAdapterScale.
func checkScale(scale float64, param string) error {
	if math.IsNaN(scale) || math.IsInf(scale, 0) || math.Abs(scale) > MaxAdapterScale {
		return fmt.Errorf("%w: %s is %v; an adapter's scale is a finite number from -%d to %d (1 as trained, 0 off)",
			llm.ErrInvalidInput, param, scale, MaxAdapterScale, MaxAdapterScale)
	}
	return nil
}

// checkAdapterID refuses an id a client could not name back.
func checkAdapterID(id string) error {
	if len(id) > 128 {
		return fmt.Errorf("%w: the adapter id is %d bytes long; ids are at most 128", llm.ErrInvalidInput, len(id))
	}
	for _, r := range id {
		if r <= 0x20 || r == 0x7f {
			return fmt.Errorf("%w: the adapter id %q holds a space or a control character", llm.ErrInvalidInput, id)
		}
	}
	return nil
}

// looksLikePath reports whether ref, not absolute, reads as a file path rather than an id.
func looksLikePath(ref string) bool {
	return strings.HasPrefix(ref, ".") || strings.HasPrefix(ref, "~") || strings.HasSuffix(strings.ToLower(ref), ".gguf") ||
		strings.ContainsRune(ref, '\\')
}
