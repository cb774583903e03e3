package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/superfluid/superfluid/assets"
	"github.com/superfluid/superfluid/runtime/backends"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/runtime/worker"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/batches"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/metrics"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/quota"
	"github.com/superfluid/superfluid/server/store"
	"github.com/superfluid/superfluid/server/web"
)

// App is a running server: store, model catalog and manager, core and HTTP handler.
type App struct {
	*library // store, catalog and manager, core, model sources (library.go)
	cfg      Config
	batches  *batches.Service // the Files and Batches APIs and the batch runner
	handler  http.Handler
	preload  *models.Entry // the model named on the command line, or nil
	metrics  *metrics.Metrics
	// stopMetrics ends the count of the manager's model events.
	stopMetrics func()
	// stopHistory ends the load history's record of them (team_history.go).
	stopHistory func()
	// web is team mode's browser API (nil without --team); closed before the manager.
	web  *web.API      // closed before the manager, shut down with the listener
	keys *auth.Keyring // API keys (access.go)
	bind *server.Bind  // the host the server listens on, for the Host check
	team *team         // team mode's lanes (team.go); nil outside it

	// people is team mode's people (team.go), nil without --team; firstAdmin the line about
	// the first admin, until teamNote prints it.
	people     *people.Service
	firstAdmin string
	quota      *quota.Service // team mode's token quotas (team_quota.go); nil without --team

	mu      sync.Mutex
	workers map[string]*worker.Client // by model path (generation workers)

	// preloading is the load of the model named on the command line, which Close waits for.
	preloading sync.WaitGroup
	closeOnce  sync.Once
	closeErr   error
}

// UsageError is a problem with what the user asked for (exit code 2).
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

// New is Open, then loading the model named in cfg in the background.
func New(cfg Config) (*App, error) {
	a, err := Open(cfg)
	if err != nil {
		return nil, err
	}
	if err := a.expose(cfg.Host); err != nil {
		a.Close()
		return nil, err
	}
	if err := a.startTeam(); err != nil {
		a.Close()
		return nil, err
	}
	if err := a.startBackground(); err != nil {
		a.Close()
		return nil, err
	}
	if a.preload != nil {
		a.preloading.Add(1)
		go func() {
			defer a.preloading.Done()
			// Load eagerly so the first request is fast; a failure is reported to that request.
			// One closed meanwhile (quit during start-up) is no failure.
			if _, err := a.mgr.Load(context.Background(), a.preload.ID); err != nil && !errors.Is(err, models.ErrClosed) {
				slog.Error("model failed to load", "model", a.preload.ID, "err", err)
			}
		}()
	}
	return a, nil
}

// startBackground starts what runs beside the requests (the batch runner, file expiry, the
// rereading of API keys) for a server: New and the desktop app call it; the library commands
// (list, pull) do not.
func (a *App) startBackground() error {
	if err := a.batches.StartBackground(); err != nil {
		return fmt.Errorf("start the batch runner: %w", err)
	}
	a.keys.Start() // keys made or revoked by superfluid keys apply here within auth.DefaultRefresh
	return a.team.start()
}

// Open opens the library (openLibrary: the store, the catalog, registering the bundled model
// on first start, and the manager), builds the server on it and resolves the model named in cfg (registering a .gguf path; a Hugging Face reference must be
// pulled first, see PullReference). Nothing loads until asked.
func Open(cfg Config) (*App, error) {
	a := &App{cfg: cfg, workers: map[string]*worker.Client{}}
	l, err := openLibrary(cfg, models.Config{
		NewRunner: a.newRunner, ContextLength: cfg.ContextLength, Parallel: cfg.Parallel,
		KeepAlive: cfg.ModelKeepAlive, MaxLoaded: cfg.MaxLoaded, MemoryBudget: cfg.MemoryBudget, DrainTimeout: cfg.UnloadDrain,
		Crashed: func(err error) bool { return errors.Is(err, worker.ErrWorkerExited) },
	})
	if err != nil {
		return nil, err
	}
	a.library = l
	if err := a.build(); err != nil {
		l.Close()
		return nil, err
	}
	return a, nil
}

// checkStoreConfig refuses what the store cannot keep: negative caps and record days.
func checkStoreConfig(cfg Config) error {
	if cfg.FilesMaxBytes < 0 || cfg.FilesExpiry < 0 {
		return &UsageError{"--files-max-bytes and --files-expiry cannot be negative; 0 means no cap and no expiry"}
	}
	if cfg.RecordsDays < 0 {
		return &UsageError{fmt.Sprintf("--records-days %d: give the days to keep request records, or 0 to keep them forever", cfg.RecordsDays)}
	}
	return nil
}

// build adds the server to the library: the model named in cfg, keys, metrics, the core and
// batches, the router.
func (a *App) build() error {
	ctx, cfg, st, cat := context.Background(), a.cfg, a.store, a.mgr.Catalog()
	var err error
	if cfg.ModelPath != "" {
		if a.preload, err = a.resolve(ctx, cfg.ModelPath); err != nil {
			return err
		}
		// A client naming the repository alone means the quantization serve was given.
		cat.Prefer(a.preload.ID)
	}
	if a.keys, err = openKeys(cfg, st); err != nil {
		return err
	}
	if a.people, err = openPeople(cfg, st, a.keys); err != nil {
		return err
	}
	if a.quota, err = openQuota(cfg, st); err != nil {
		return err
	}
	a.bind = newBind(cfg)
	a.metrics = metrics.New()
	shared := teamPrefixes(cfg, st)
	a.svc = core.NewCatalog(core.Config{MaxTokens: cfg.MaxTokens, Speculative: cfg.Speculative, Queue: cfg.Queue, CheckRuntime: a.checkRuntime, Observer: a.metrics,
		QoS: qosConfig(cfg), IsolateCache: cfg.Team, SharedPrefixes: corePrefixes(shared), Media: mediaLimits(&cfg)}, st, a.mgr, a.sources)
	a.batches = batches.New(batches.Config{Owner: ownerLookup(a.keys), AdmitLine: quotaLineAdmission(a.quota),
		Files: batches.FilesConfig{Dir: filesDir(cfg.DataDir), MaxBytes: cfg.FilesMaxBytes, Expiry: cfg.FilesExpiry}}, a.svc, st)
	a.metrics.WatchService(a.svc)
	a.stopMetrics = a.metrics.Watch(a.svc)
	a.buildTeam()
	a.stopHistory = a.watchLoadHistory()
	a.web = a.webAPI()
	a.handler = server.New(server.Config{KeepAlive: cfg.KeepAlive, WriteTimeout: cfg.WriteTimeout, TrustedProxies: cfg.TrustedProxies,
		CompletionBurst: cfg.CompletionBurst, CompletionRate: cfg.CompletionRate, CompletionDeadline: cfg.CompletionDeadline,
		Metrics: a.metrics, Keys: a.keys, Bind: a.bind, CORSOrigins: corsOrigins(cfg),
		Limits: serverLimits(cfg, a.quota), AllowBatchInvariant: cfg.AllowBatchInvariant, NonstreamKeepalive: cfg.NonstreamKeepalive, Batches: a.batches,
		Lanes: a.team.lanesManager(), Devices: a.team.laneDevices(), Bookings: a.team.bookingService(),
		People: a.people, SharedPrefixes: shared, Quota: a.quota, Web: a.web}, a.svc)
	return nil
}

// newRunner starts workers of this binary for a catalog model.
func (a *App) newRunner(e *models.Entry, vocabOnly bool) models.Runner {
	if a.cfg.NewRunner != nil {
		if r := a.cfg.NewRunner(e, vocabOnly); r != nil {
			return r
		}
	}
	opts := worker.Options{
		Command: a.cfg.WorkerCommand, Env: a.cfg.WorkerEnv, ModelPath: e.Path, VocabOnly: vocabOnly,
		ContextLength: a.cfg.ContextLength, Parallel: a.cfg.Parallel, Threads: a.cfg.Threads, Log: a.cfg.WorkerLog,
		SocketDir: filepath.Join(a.cfg.DataDir, "run"),
	}
	if !vocabOnly {
		opts.ProjectorPath = e.Record.Projector
		opts.KVDir, opts.KVDiskMax = kvDisk(&a.cfg)
		// The model's own settings, as the core handed them to the manager: its window, lanes
		// and runtime.
		set := a.mgr.Settings(e.ID)
		speedOptions(&opts, set, &a.cfg)
		if set.ContextLength > 0 {
			opts.ContextLength = set.ContextLength
		}
		if set.Lanes > 0 {
			opts.Parallel = set.Lanes
		}
		if rt, err := backends.Find(a.runtimes(), set.Runtime); err == nil && rt.GPU {
			opts.Env = append(append([]string(nil), opts.Env...), rt.Env()...)
			opts.GPULayers, opts.Runtime = 999, rt.Name
		}
	}
	c := worker.NewClient(opts)
	if !vocabOnly {
		a.mu.Lock()
		a.workers[e.Path] = c
		a.mu.Unlock()
	}
	return c
}

// runtimes are the runtimes this machine has (the CPU and those under <data>/runtimes).
func (a *App) runtimes() []backends.Backend {
	return backends.List(a.cfg.DataDir, backends.Detect())
}

// checkRuntime says why a runtime cannot serve models here.
func (a *App) checkRuntime(name string) error {
	_, err := backends.Find(a.runtimes(), name)
	return err
}

// resolve finds the model named on the command line: a catalog id, or a .gguf file, which is
// registered in place. A Hugging Face reference not yet pulled is a usage error here (serve
// pulls it first).
func (a *App) resolve(ctx context.Context, name string) (*models.Entry, error) {
	cat := a.mgr.Catalog()
	if looksLikePath(name) {
		st, err := os.Stat(name)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return nil, &UsageError{fmt.Sprintf("model file %s does not exist; pass the path of a .gguf file, a model id from superfluid list, or a Hugging Face reference", name)}
		case err != nil:
			return nil, &UsageError{fmt.Sprintf("model file %s: %v", name, err)}
		case st.IsDir():
			return nil, &UsageError{fmt.Sprintf("%s is a directory; pass the path of a .gguf file inside it", name)}
		}
		e, err := cat.Add(ctx, models.AddRequest{Path: name, Projector: a.cfg.Projector})
		if errors.Is(err, models.ErrNotModel) {
			return nil, &UsageError{fmt.Sprintf("%s is not a usable GGUF model file: %v", name, err)}
		}
		if errors.Is(err, llm.ErrInvalidInput) {
			return nil, &UsageError{err.Error()}
		}
		if err == nil && e.IsAdapter() {
			return nil, &UsageError{fmt.Sprintf("%s is a LoRA adapter, not a model: serve its base model and load the adapter with POST /v1/lora/load", name)}
		}
		return e, err
	}
	e, err := cat.Lookup(name)
	if err != nil {
		if isReference(name) {
			return nil, &UsageError{fmt.Sprintf("%s is not pulled yet: superfluid pull %s", name, name)}
		}
		return nil, &UsageError{err.Error()}
	}
	if a.cfg.Projector != "" && e.IsAlias() {
		return nil, &UsageError{fmt.Sprintf("%s is another name of %s: give the projector to %s", e.ID, e.AliasOf, e.AliasOf)}
	}
	if a.cfg.Projector != "" { // the catalog model gets this projector from now on
		if e, err = cat.Add(ctx, models.AddRequest{Path: e.Path, ID: e.ID, Projector: a.cfg.Projector}); err != nil {
			return nil, &UsageError{err.Error()}
		}
	}
	return e, nil
}

// looksLikePath reports whether a command-line model name is a file rather than an id or a
// Hugging Face reference: a file that exists wins, then anything that reads as a path.
func looksLikePath(name string) bool {
	if st, err := os.Stat(name); err == nil && !st.IsDir() {
		return true
	}
	if filepath.IsAbs(name) || strings.HasPrefix(name, "./") || strings.HasPrefix(name, "../") {
		return true
	}
	return strings.HasSuffix(name, ".gguf") && !isReference(name)
}

// registerBundled writes the bundled model into the models folder and registers it, once: a
// model the user removed stays removed until the file is gone too.
func registerBundled(ctx context.Context, cat *models.Catalog) error {
	path := filepath.Join(cat.Dir(), assets.BundledModelID+".gguf")
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	tmp := path + ".partial"
	if err := os.WriteFile(tmp, assets.BundledModel, 0o644); err != nil {
		os.Remove(tmp) // a full disk keeps no half copy: the space is the user's
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	_, err := cat.Register(ctx, models.Record{ID: assets.BundledModelID, Path: path, Source: models.SourceBundled, SHA256: assets.BundledModelSHA256})
	return err
}

// Handler is the HTTP API.
func (a *App) Handler() http.Handler { return a.handler }

// Service is the core (for in-process callers such as the bench).
func (a *App) Service() *core.Service { return a.svc }

// Manager is the model manager.
func (a *App) Manager() *models.Manager { return a.mgr }

// Worker is the generation worker of the model named on the command line (nil when none was).
func (a *App) Worker() *worker.Client {
	if a.preload == nil {
		return nil
	}
	a.mgr.Engine(a.preload) // makes the runner if it does not exist yet
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.workers[a.preload.Path]
}

// Metrics are the server's Prometheus metrics (served at /metrics).
func (a *App) Metrics() *metrics.Metrics { return a.metrics }

// Store is the database.
func (a *App) Store() *store.Store { return a.store }

// Close unloads every model and closes the store, which first writes every request record
// still queued; a request that finishes after that is counted as a dropped record. Nothing the
// app started (batch runner, loads, workers) outlives it. Calling it again does nothing.
func (a *App) Close() error {
	a.closeOnce.Do(func() { a.closeErr = a.close() })
	return a.closeErr
}

func (a *App) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Batch lines still running are dropped unrecorded; they run again at the next start.
	if err := a.batches.StopBackground(ctx); err != nil {
		slog.Warn("the batch runner did not stop in time", "err", err)
	}
	a.web.Close()       // pulls still running are cancelled before the manager and store go
	a.team.close(ctx)   // lanes drain their requests and let their engines go
	a.mgr.Close()       // loads are refused from here on; requests still running end with an engine failure...
	a.preloading.Wait() // (the preload, refused too, is done)
	_ = a.svc.Wait(ctx) // ...and are recorded before the store drains its queue and closes
	// A batch runner that outlived its stop has seen the manager close and stopped since.
	if err := a.batches.StopBackground(ctx); err != nil {
		slog.Warn("the batch runner did not stop", "err", err)
	}
	a.stopMetrics()
	if a.stopHistory != nil {
		a.stopHistory()
	}
	a.keys.Close() // the keys' rereading ends before the database closes
	return a.store.Close()
}

// Serve answers HTTP on l until ctx ends, then drains for up to 10 seconds.
func (a *App) Serve(ctx context.Context, l net.Listener) error {
	// Streamed replies bound each write themselves (server.Config.WriteTimeout): a whole-reply
	// WriteTimeout would cut long generations. IdleTimeout closes kept-alive connections that
	// send nothing more.
	srv := &http.Server{Handler: a.handler, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	if a.web != nil {
		srv.RegisterOnShutdown(a.web.Shutdown) // the live log streams end rather than hold the drain
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return srv.Shutdown(shutdownCtx)
	}
}
