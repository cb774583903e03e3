// Package models is the model library: the catalog of models a client can name (persisted in
// SQLite), the registration of local files, bundled models and Hugging Face pulls (with the
// strict GGUF check before anything is registered), and the Manager that loads models on
// demand into worker processes, with keep-alive, a memory budget, LRU eviction, one load per
// model however many requests ask at once, backoff after failed loads and quarantine of
// prompts that kill a worker.
package models

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models/source"
)

// Entry is one catalog model: its record and the facts its GGUF header gave when the catalog
// read it.
type Entry struct {
	Record
	Facts Facts
	// Err says why the file cannot be used (missing, damaged); nil when it can.
	Err error
}

// IsAlias reports whether the entry is another name for a registered model (ollama cp).
func (e *Entry) IsAlias() bool { return e.Source == SourceAlias }

// Missing reports whether the model's file is gone from disk.
func (e *Entry) Missing() bool { return e.Err != nil && errors.Is(e.Err, os.ErrNotExist) }

// Catalog is the set of registered models. It is safe for concurrent use.
type Catalog struct {
	st  RecordStore
	dir string

	mu      sync.RWMutex
	entries map[string]*Entry
	touched map[string]time.Time // last-used times written to the store
	synced  time.Time            // when the entries were last compared with the store
	// loaded reports whether an entry's model is loaded or loading (set by the Manager);
	// preferred is the id serve was started with. Both pick among a repository's
	// quantizations when a client names the repository alone (byRepo).
	loaded    func(*Entry) bool
	preferred string
	// namer knows the other names the sources' models go by (NameBy); nil: only ids.
	namer source.Namer
}

// NameBy makes the catalog answer to the names n knows besides the ids (a source's
// spellings, a bare repository for its one pulled quantization). The app sets the sources
// it pulls from, before serving.
func (c *Catalog) NameBy(n source.Namer) {
	c.mu.Lock()
	c.namer = n
	c.mu.Unlock()
}

// syncEvery bounds how often the catalog re-reads the store for changes another process made
// (superfluid pull, add or rm beside a running server).
const syncEvery = time.Second

// sync picks up rows another process added, changed or removed, at most once per syncEvery
// unless forced (a name the catalog does not know: one small read of the models table).
func (c *Catalog) sync(force bool) {
	c.mu.Lock()
	if !force && time.Since(c.synced) < syncEvery {
		c.mu.Unlock()
		return
	}
	c.synced = time.Now()
	c.mu.Unlock()
	rows, err := c.st.Models(context.Background())
	if err != nil {
		return
	}
	seen := map[string]bool{}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range rows {
		seen[r.ID] = true
		if e, ok := c.entries[r.ID]; !ok || e.Path != r.Path || e.SHA256 != r.SHA256 || e.Projector != r.Projector || e.BaseModel != r.BaseModel {
			c.entries[r.ID] = describeEntry(r)
		}
	}
	for id := range c.entries {
		if !seen[id] {
			delete(c.entries, id)
		}
	}
}

// OpenCatalog reads the catalog from st. dir is the models folder (<data>/models), where pulls
// and the bundled model are written and the only place rm deletes files from.
func OpenCatalog(ctx context.Context, st RecordStore, dir string) (*Catalog, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create the models folder %s: %w", dir, err)
	}
	rows, err := st.Models(ctx)
	if err != nil {
		return nil, err
	}
	c := &Catalog{st: st, dir: dir, entries: map[string]*Entry{}, touched: map[string]time.Time{}}
	for _, r := range rows {
		c.entries[r.ID] = describeEntry(r)
	}
	return c, nil
}

// Dir is the models folder (SetDir moves it).
func (c *Catalog) Dir() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.dir
}

func describeEntry(r Record) *Entry {
	e := &Entry{Record: r}
	e.Facts, e.Err = Describe(r.Path)
	if e.Err == nil && !e.Facts.Adapter {
		describeProjector(&e.Facts, r.Projector)
	}
	return e
}

// List returns every model, sorted by id; adapters are not models (Adapters lists them).
func (c *Catalog) List() []*Entry {
	c.sync(false)
	c.mu.RLock()
	out := make([]*Entry, 0, len(c.entries))
	for _, e := range c.entries {
		if !e.IsAdapter() {
			out = append(out, e)
		}
	}
	c.mu.RUnlock()
	for i, e := range out {
		out[i] = c.current(e)
	}
	slices.SortFunc(out, func(a, b *Entry) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// current re-reads an entry whose file disappeared or came back behind the catalog's back.
func (c *Catalog) current(e *Entry) *Entry {
	_, err := os.Stat(e.Path)
	if (err != nil) == e.Missing() {
		return e
	}
	return c.Refresh(e)
}

// Lookup finds the model a client names: its id, the id without a ":latest" tag or in
// another spelling its source knows ("OWNER/REPO:Q" for "hf.co/OWNER/REPO:Q", see NameBy),
// case-insensitively when that is unambiguous. An unknown name wraps
// llm.ErrModelNotFound; a name that could reach outside the catalog wraps llm.ErrInvalidInput,
// and an adapter's id ErrIsAdapter (LookupAdapter finds adapters).
func (c *Catalog) Lookup(name string) (*Entry, error) {
	e, err := c.lookup(name)
	if err == nil && e.IsAdapter() {
		return nil, adapterError(e)
	}
	return e, err
}

// lookup is Lookup of an entry of either kind.
func (c *Catalog) lookup(name string) (*Entry, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	e, err := c.find(name)
	if errors.Is(err, llm.ErrModelNotFound) {
		c.sync(true) // perhaps another process just added it
		e, err = c.find(name)
	}
	if errors.Is(err, llm.ErrModelNotFound) {
		if byRepo, rerr := c.byRepo(name, nil); byRepo != nil || rerr != nil {
			e, err = byRepo, rerr
		}
	}
	if err != nil {
		return nil, err
	}
	return c.current(e), nil
}

// Prefer makes id the model a bare repository name means when the catalog holds several
// quantizations of that repository and not exactly one of them is loaded: the model serve
// was started with.
func (c *Catalog) Prefer(id string) {
	c.mu.Lock()
	c.preferred = id
	c.mu.Unlock()
}

// LookupRepo is byRepo among the entries allow accepts: what a bare repository name means to
// a caller who may use only some models (an API key limited to them), so that it picks among
// that caller's quantizations, whichever others are loaded, and its error lists only those.
// (nil, nil): name is no bare repository, or allow accepts nothing pulled from it.
func (c *Catalog) LookupRepo(name string, allow func(*Entry) bool) (*Entry, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	e, err := c.byRepo(name, allow)
	if e != nil {
		e = c.current(e)
	}
	return e, err
}

// byRepo finds the model a Hugging Face repository named without a quantization means
// ("OWNER/REPO", "hf.co/OWNER/REPO", the spec's own example): the one pulled quantization of
// it; of several, the one loaded, else the preferred one (serve's). Otherwise it returns an
// error listing them, or (nil, nil) when the name is no bare repository or the catalog holds
// nothing pulled from it. allow, when set, limits the quantizations considered.
func (c *Catalog) byRepo(name string, allow func(*Entry) bool) (*Entry, error) {
	c.mu.RLock()
	var ref source.Reference
	ok := false
	if c.namer != nil {
		ref, ok = c.namer.Repository(name)
	}
	if !ok {
		c.mu.RUnlock()
		return nil, nil
	}
	var cands []*Entry
	for _, e := range c.entries {
		if e.Source == ref.Source && strings.EqualFold(e.Repo, ref.Repo) && !e.IsAdapter() {
			cands = append(cands, e)
		}
	}
	loaded, preferred := c.loaded, c.preferred
	c.mu.RUnlock()
	if allow != nil { // outside c.mu: allow is the caller's
		cands = slices.DeleteFunc(cands, func(e *Entry) bool { return !allow(e) })
	}
	slices.SortFunc(cands, func(a, b *Entry) int { return strings.Compare(a.ID, b.ID) })
	switch len(cands) {
	case 0:
		return nil, nil
	case 1:
		return cands[0], nil
	}
	// Called without c.mu: loaded takes the manager's lock.
	var live []*Entry
	for _, e := range cands {
		if loaded != nil && loaded(e) {
			live = append(live, e)
		}
	}
	if len(live) == 1 {
		return live[0], nil
	}
	pool := cands
	if len(live) > 1 {
		pool = live
	}
	for _, e := range pool {
		if e.ID == preferred {
			return e, nil
		}
	}
	ids := make([]string, len(cands))
	for i, e := range cands {
		ids[i] = e.ID
	}
	return nil, fmt.Errorf("%w: the model %q is a repository with %d quantizations in the catalog (%s); name one of them",
		llm.ErrModelNotFound, name, len(cands), strings.Join(ids, ", "))
}

func (c *Catalog) find(name string) (*Entry, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	cands := c.candidates(name)
	for _, cand := range cands {
		if e, ok := c.entries[cand]; ok {
			return e, nil
		}
	}
	var found *Entry
	for _, cand := range cands {
		for id, e := range c.entries {
			if strings.EqualFold(id, cand) {
				if found != nil && found != e {
					return nil, fmt.Errorf("%w: the model %q is ambiguous; use its exact id from GET /v1/models", llm.ErrModelNotFound, name)
				}
				found = e
			}
		}
	}
	if found != nil {
		return found, nil
	}
	return nil, fmt.Errorf("%w: the model %q is not in the catalog; GET /v1/models lists the models, and superfluid pull or POST /api/pull fetches one", llm.ErrModelNotFound, name)
}

// candidates are the ids a name may mean, most literal first: itself, without a ":latest"
// tag, and the namer's spellings of that (called with c.mu held).
func (c *Catalog) candidates(name string) []string {
	out := []string{name}
	base, tagged := strings.CutSuffix(name, ":latest")
	if tagged {
		out = append(out, base)
	}
	if c.namer != nil {
		out = append(out, c.namer.Spellings(base)...)
	}
	return out
}

// sameContent reports whether two files hold the same bytes (hashed only when sizes match).
func sameContent(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	if errA != nil || errB != nil || sa.Size() != sb.Size() {
		return false
	}
	ha, errA := fileSHA256(a)
	hb, errB := fileSHA256(b)
	return errA == nil && errB == nil && ha == hb
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// idFromFile is a model's default id: the file name without .gguf (and without a split
// part's -00001-of-0000N), with characters ids cannot hold replaced by '-'.
func idFromFile(base string) string {
	id := strings.TrimSuffix(splitName.ReplaceAllString(base, "$1"), ".gguf")
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-+", r) {
			return r
		}
		return '-'
	}, id)
}

// Register checks the record's file with the strict GGUF reader and stores it. A file that is
// not a usable model is refused before anything is stored.
func (c *Catalog) Register(ctx context.Context, r Record) (*Entry, error) {
	if err := checkID(r.ID); err != nil {
		return nil, err
	}
	facts, err := Describe(r.Path)
	if err != nil {
		return nil, err
	}
	if err := c.kindOf(&r, &facts); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[r.ID]; ok && old.Path != r.Path {
		return nil, fmt.Errorf("%w: the name %q is taken by %s; choose another name (--name) or remove it first", llm.ErrInvalidInput, r.ID, old.Path)
	}
	r.Size, r.Architecture, r.ParameterCount = facts.Size, facts.Architecture, facts.ParameterCount
	r.Quantization, r.ContextLength, r.Capabilities = facts.Quantization, facts.ContextLength, facts.Capabilities
	if r.AddedAt.IsZero() {
		r.AddedAt = time.Now()
	}
	if err := c.st.PutModel(ctx, r); err != nil {
		return nil, err
	}
	e := &Entry{Record: r, Facts: facts}
	c.entries[r.ID] = e
	return e, nil
}

// Copy registers dst as an alias of src sharing its file (Ollama's copy).
func (c *Catalog) Copy(ctx context.Context, src, dst string) (*Entry, error) {
	e, err := c.Lookup(src)
	if err != nil {
		return nil, err
	}
	if err := checkID(dst); err != nil {
		return nil, err
	}
	if _, err := c.Lookup(dst); err == nil {
		return nil, fmt.Errorf("%w: a model named %q already exists; delete it first", llm.ErrInvalidInput, dst)
	}
	r := e.Record
	r.ID, r.Source, r.AliasOf, r.AddedAt, r.LastUsedAt = dst, SourceAlias, e.ID, time.Now(), time.Time{}
	return c.Register(ctx, r)
}

// Remove takes the model out of the catalog. It reports whether its file may be deleted: it
// lies inside the models folder and no other entry uses it.
func (c *Catalog) Remove(ctx context.Context, name string) (*Entry, bool, error) {
	e, err := c.lookup(name) // a model or an adapter
	if err != nil {
		return nil, false, err
	}
	if err := c.st.DeleteModel(ctx, e.ID); err != nil && !errors.Is(err, ErrNoRecord) {
		return nil, false, err
	}
	c.mu.Lock()
	delete(c.entries, e.ID)
	shared := false
	for _, other := range c.entries {
		shared = shared || other.Path == e.Path
	}
	c.mu.Unlock()
	return e, !shared && c.owns(e.Path), nil
}

// owns reports whether path lies inside the models folder.
func (c *Catalog) owns(path string) bool {
	rel, err := filepath.Rel(c.Dir(), path)
	return err == nil && rel != "." && !strings.HasPrefix(rel, "..") && !filepath.IsAbs(rel)
}

// Touch records that the model served a request; the store is written at most once a minute.
func (c *Catalog) Touch(id string, t time.Time) {
	c.mu.Lock()
	e, ok := c.entries[id]
	if ok {
		e.LastUsedAt = t
	}
	write := ok && t.Sub(c.touched[id]) >= time.Minute
	if write {
		c.touched[id] = t
	}
	c.mu.Unlock()
	if write {
		go func() { _ = c.st.TouchModel(context.Background(), id, t) }()
	}
}

// Refresh re-reads an entry's file (after it reappeared or was replaced).
func (c *Catalog) Refresh(e *Entry) *Entry {
	fresh := describeEntry(e.Record)
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.entries[e.ID]; ok && cur == e {
		c.entries[e.ID] = fresh
	}
	return fresh
}
