package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server/store"
)

// Library is where the core finds its models.
type Library interface {
	// Models lists the models a client can name.
	Models() []*Model
	// Model resolves a client's name (already checked by models.CheckName).
	Model(name string) (*Model, error)
}

// staticLibrary is a fixed set of models (tests, benchmarks).
type staticLibrary []*Model

func (l staticLibrary) Models() []*Model { return l }

func (l staticLibrary) Model(name string) (*Model, error) {
	for _, m := range l {
		if m.Matches(name) {
			return m, nil
		}
	}
	return nil, fmt.Errorf("%w: the model %q does not exist; GET /v1/models lists the served models", llm.ErrModelNotFound, name)
}

// catalogLibrary serves the catalog through the model manager; each entry's Model (its chat
// template and special tokens, read from the GGUF once) is kept while the entry is unchanged.
type catalogLibrary struct {
	mgr *models.Manager
	// settle hands an entry's stored settings to the manager before its Model is built (the
	// Model's window is the manager's, settings applied): Service.settle.
	settle func(id string)

	mu    sync.Mutex
	built map[*models.Entry]*Model
	// scheds is the scheduling state of each model file's worker (the manager runs one worker
	// per file), shared by every Model of that file: aliases, and Models rebuilt when their
	// entry or settings change.
	scheds map[string]*workerSched
}

// NewCatalog builds the core over the manager's catalog: every catalog model is servable and
// loads on demand; src is where PullModel pulls from (a source.List of the sources app
// registers; nil pulls nothing).
func NewCatalog(cfg Config, st *store.Store, mgr *models.Manager, src models.Source) *Service {
	lib := &catalogLibrary{mgr: mgr, built: map[*models.Entry]*Model{}, scheds: map[string]*workerSched{}}
	s := &Service{cfg: cfg, store: st, lib: lib, mgr: mgr, source: src, media: newResolver(cfg), mediaCache: newMediaCache(mediaCacheBytes, mediaCacheEntries)}
	lib.settle = func(id string) { s.settle(context.Background(), id) }
	mgr.SetLoadGate(s.move.loadGate)
	s.handOverSettings(context.Background())
	return s
}

// PullModel fetches a reference into the catalog from the core's sources (see
// models.Manager.Pull).
func (s *Service) PullModel(ctx context.Context, reference string, progress func(PullProgress)) (*Model, error) {
	return s.PullModelInto(ctx, reference, "", progress)
}

// PullModelInto is PullModel with the files downloaded under dir, an absolute folder (a
// storage's), instead of the models folder ("": the models folder); see
// models.Manager.PullInto.
func (s *Service) PullModelInto(ctx context.Context, reference, dir string, progress func(PullProgress)) (*Model, error) {
	if s.mgr == nil || s.source == nil {
		return nil, errNoCatalog
	}
	done, err := s.GuardModels("the download of "+reference, "download again")
	if err != nil {
		return nil, err
	}
	defer done()
	e, err := s.mgr.PullInto(ctx, s.source, reference, dir, progress)
	if err != nil {
		return nil, err
	}
	return s.lib.Model(e.ID)
}

func (l *catalogLibrary) Models() []*Model {
	entries := l.mgr.Catalog().List()
	out := make([]*Model, 0, len(entries))
	for _, e := range entries {
		out = append(out, l.model(e))
	}
	return out
}

func (l *catalogLibrary) Model(name string) (*Model, error) {
	e, err := l.mgr.Catalog().Lookup(name)
	if err != nil {
		return nil, err
	}
	return l.model(e), nil
}

func (l *catalogLibrary) model(e *models.Entry) *Model {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m, ok := l.built[e]; ok {
		return m
	}
	if l.settle != nil {
		l.settle(e.ID) // a model that joined the catalog after the start: its settings first
	}
	engine := l.mgr.Engine(e)
	m := DescribeModel(e.ID, e.Path, engine.Info().ContextLength)
	m.Engine, m.Entry = engine, e
	m.Size, m.Created = e.Size, e.AddedAt
	// What the projector encodes, from its header: known before any load (a projector that
	// cannot be read encodes nothing; its load says why).
	m.Projector, m.Vision, m.Audio = e.Projector, e.Facts.Vision, e.Facts.Audio
	if m.Architecture == "" {
		m.Architecture = e.Architecture
	}
	w, ok := l.scheds[e.Path]
	if !ok {
		w = new(workerSched)
		l.scheds[e.Path] = w
	}
	m.shared.Store(w)
	l.built[e] = m
	return m
}

// forget drops e's built Model, so its window is read again (after its settings changed).
func (l *catalogLibrary) forget(e *models.Entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.built, e)
}

// DescribeModel reads what the core needs from a model's GGUF header: architecture, chat
// template, special tokens and fill-in-the-middle markers. ctx is the window a worker will
// load it with (0: the model's, at most 4096). A file that cannot be read gets the fallback
// template; its worker will say why it cannot load.
func DescribeModel(id, path string, ctx int) *Model {
	m := &Model{ID: id, Path: path, ContextLength: ctx}
	if st, err := os.Stat(path); err == nil {
		m.Size, m.Created = st.Size(), st.ModTime()
	}
	f, err := gguf.ReadFile(path)
	source := ""
	if err != nil {
		slog.Warn("model file cannot be read; the worker will report why it cannot load", "model", path, "err", err)
	} else {
		m.Architecture = f.Architecture()
		if m.ContextLength == 0 {
			m.ContextLength = min(f.ContextLength(), 4096)
		}
		m.BOS, m.EOS = specialText(f, "bos"), specialText(f, "eos")
		if fim, ok := f.FIMTokens(); ok {
			m.FIM = &FIMTokens{Prefix: fim.Prefix, Suffix: fim.Suffix, Middle: fim.Middle}
		}
		if emb, ok := f.Embedding(); ok {
			m.EmbeddingFacts = &llm.Embedding{Pooling: gguf.PoolingName(emb.Pooling), Length: emb.Length}
		}
		source = f.ChatTemplate()
	}
	if m.Template, err = chat.Parse(source); err != nil {
		slog.Warn("the model's chat template does not compile; using the fallback", "model", path, "err", err)
		m.Template, _ = chat.Parse("")
	}
	return m
}

func specialText(f *gguf.File, name string) string {
	id, ok := f.SpecialToken(name)
	if !ok {
		return ""
	}
	text, _ := f.TokenText(id)
	return text
}

// Manager is the model manager behind the catalog, or nil when the core serves a fixed set.
func (s *Service) Manager() *models.Manager { return s.mgr }

// errNoCatalog answers model-management calls on a core that serves a fixed set of models.
var errNoCatalog = fmt.Errorf("%w: this server serves a fixed set of models", llm.ErrInvalidInput)

// UnloadModel unloads a model now, after its requests in flight finish.
func (s *Service) UnloadModel(ctx context.Context, name string) (*Model, error) {
	m, err := s.Model(name)
	if err != nil {
		return nil, err
	}
	if s.mgr == nil {
		return nil, errNoCatalog
	}
	_, err = s.mgr.Unload(ctx, m.Entry.ID)
	return m, err
}

// DeleteModel unloads a model (its requests in flight finish first), removes it from the
// catalog and deletes its files (its projector's too) when they live in the models folder and
// nothing else uses them. A LoRA adapter of the catalog is removed the same way.
func (s *Service) DeleteModel(ctx context.Context, name string) (*Model, error) {
	m, err := s.Model(name)
	if errors.Is(err, models.ErrIsAdapter) && s.mgr != nil {
		e, lerr := s.mgr.Catalog().LookupAdapter(name)
		if lerr != nil {
			return nil, lerr
		}
		m, err = &Model{ID: e.ID, Path: e.Path, Architecture: e.Architecture, Size: e.Size, Created: e.AddedAt, Entry: e}, nil
	}
	if err != nil {
		return nil, err
	}
	if s.mgr == nil {
		return nil, errNoCatalog
	}
	done, err := s.GuardModels("the deletion of "+m.ID, "delete the model")
	if err != nil {
		return nil, err
	}
	defer done()
	e, deleteFile, err := s.mgr.Remove(ctx, m.Entry.ID)
	if err != nil {
		return nil, err
	}
	s.forgetSettings(ctx, e.ID)
	if !deleteFile {
		return m, nil
	}
	files := append([]string{e.Path}, e.Facts.Parts...)
	if s.mgr.Catalog().Orphaned(e.Projector) {
		files = append(files, e.Projector)
	}
	for _, part := range files {
		if err := os.Remove(part); err != nil && !errors.Is(err, os.ErrNotExist) {
			slog.Warn("delete model file", "path", part, "err", err)
		}
	}
	return m, nil
}

// CopyModel registers dst as another name for src (Ollama's copy).
func (s *Service) CopyModel(ctx context.Context, src, dst string) error {
	if s.mgr == nil {
		return errNoCatalog
	}
	if err := models.CheckName(src); err != nil {
		return err
	}
	done, err := s.GuardModels("the copy of "+src, "copy the model")
	if err != nil {
		return err
	}
	defer done()
	_, err = s.mgr.Catalog().Copy(ctx, src, dst)
	return err
}

// ModelStatus is a model's runtime state; a fixed-set model is loaded or not.
func (s *Service) ModelStatus(m *Model) models.Status {
	if s.mgr == nil || m.Entry == nil {
		st := models.Status{State: models.StateUnloaded}
		if m.Loaded() {
			st.State = models.StateLoaded
		}
		return st
	}
	return s.mgr.Status(m.Entry)
}

// KeepAlive is the default keep-alive (how long an idle model stays loaded; negative: forever).
func (s *Service) KeepAlive() time.Duration {
	if s.mgr == nil {
		return -1
	}
	return s.mgr.Config().KeepAlive
}
