package app

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/superfluid/superfluid/app/desktop"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/runtime/worker"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/store"
)

// library is the store, the catalog and its manager, the core over them and the model sources:
// all the library commands (list, add, rm, pull, and serve's pull of a model not yet in the
// catalog) need, and what App builds its server on. openLibrary is the one place they are
// wired.
type library struct {
	store   *store.Store
	mgr     *models.Manager
	svc     *core.Service
	sources models.Source
}

// openLibrary opens the store and the catalog (registering the bundled model on first start),
// the model sources and a manager with mcfg over the catalog. It builds no core: the caller
// does (withLibrary a bare one, App one with its metrics and QoS). On an error nothing is left
// open.
func openLibrary(cfg Config, mcfg models.Config) (*library, error) {
	if err := checkStoreConfig(cfg); err != nil {
		return nil, err
	}
	st, err := store.OpenWith(databasePath(cfg.DataDir), store.Options{KeepRecords: time.Duration(cfg.RecordsDays) * 24 * time.Hour})
	if err != nil {
		return nil, fmt.Errorf("open the database in %s: %w", cfg.DataDir, err)
	}
	ctx := context.Background()
	cat, err := models.OpenCatalog(ctx, st, chosenModelsDir(ctx, cfg, st))
	if err != nil {
		st.Close()
		return nil, err
	}
	if err := registerBundled(ctx, cat); err != nil {
		slog.Warn("the bundled model could not be registered", "err", err)
	}
	return &library{store: st, mgr: models.NewManager(cat, mcfg), sources: catalogSources(cfg, cat)}, nil
}

// chosenModelsDir is the models folder: --models-dir, else the one the desktop app moved the
// models to, else <data>/models.
func chosenModelsDir(ctx context.Context, cfg Config, st *store.Store) string {
	if cfg.ModelsDir != "" {
		if abs, err := filepath.Abs(cfg.ModelsDir); err == nil {
			return abs
		}
		return cfg.ModelsDir
	}
	if dir, err := st.AppSetting(ctx, desktop.SettingModelsDir); err == nil && dir != "" {
		return dir
	}
	return modelsDir(cfg.DataDir)
}

// Close closes the manager and the store.
func (l *library) Close() error {
	l.mgr.Close()
	return l.store.Close()
}

// withLibrary opens the catalog without serving (no router, keys or metrics, no background
// work, no model loaded), runs fn and closes it.
func withLibrary(cfg Config, fn func(*library) error) error {
	l, err := openLibrary(cfg, models.Config{NewRunner: func(e *models.Entry, vocabOnly bool) models.Runner {
		if cfg.NewRunner != nil {
			if r := cfg.NewRunner(e, vocabOnly); r != nil {
				return r
			}
		}
		// Never started: the library commands load no model.
		return worker.NewClient(worker.Options{Command: cfg.WorkerCommand, ModelPath: e.Path, VocabOnly: vocabOnly, SocketDir: filepath.Join(cfg.DataDir, "run")})
	}})
	if err != nil {
		return err
	}
	defer l.Close()
	l.svc = core.NewCatalog(core.Config{}, l.store, l.mgr, l.sources) // a removal drops the model's settings too
	return fn(l)
}
