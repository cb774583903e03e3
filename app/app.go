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
	"time"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/worker"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/store"
)

// App is a running server: store, model worker, core and HTTP handler.
type App struct {
	cfg     Config
	store   *store.Store
	engine  *worker.Client
	svc     *core.Service
	handler http.Handler
}

// UsageError is a problem with what the user asked for (exit code 2).
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

// New opens the store, describes the model and starts its worker in the background.
func New(cfg Config) (*App, error) {
	model, err := describeModel(cfg)
	if err != nil {
		return nil, err
	}
	st, err := store.Open(databasePath(cfg.DataDir))
	if err != nil {
		return nil, fmt.Errorf("open the database in %s: %w", cfg.DataDir, err)
	}
	engine := worker.NewClient(worker.Options{
		Command: cfg.WorkerCommand, Env: cfg.WorkerEnv, ModelPath: model.Path,
		ContextLength: cfg.ContextLength, Parallel: cfg.Parallel, Threads: cfg.Threads, Log: cfg.WorkerLog,
		SocketDir: filepath.Join(cfg.DataDir, "run"),
	})
	model.Engine = engine
	svc := core.New(core.Config{MaxTokens: cfg.MaxTokens, Queue: cfg.Queue}, st, model)
	a := &App{cfg: cfg, store: st, engine: engine, svc: svc,
		handler: server.New(server.Config{KeepAlive: cfg.KeepAlive, CompletionBurst: cfg.CompletionBurst,
			CompletionRate: cfg.CompletionRate, CompletionDeadline: cfg.CompletionDeadline}, svc)}
	go func() {
		// Load eagerly so the first request is fast; a failure is reported to that request.
		if err := engine.Start(context.Background()); err != nil {
			slog.Error("model failed to load", "model", model.ID, "err", err)
		}
	}()
	return a, nil
}

// Handler is the HTTP API.
func (a *App) Handler() http.Handler { return a.handler }

// Service is the core (for in-process callers such as the bench).
func (a *App) Service() *core.Service { return a.svc }

// Worker is the model's worker client.
func (a *App) Worker() *worker.Client { return a.engine }

// Store is the database.
func (a *App) Store() *store.Store { return a.store }

// Close stops the worker and closes the store.
func (a *App) Close() error {
	a.engine.Close()
	return a.store.Close()
}

// Serve answers HTTP on l until ctx ends, then drains for up to 10 seconds.
func (a *App) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{Handler: a.handler, ReadHeaderTimeout: 30 * time.Second}
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

// describeModel checks the model file and reads what the app needs from its metadata. A file
// that is missing, a directory or not GGUF is a usage error; a damaged GGUF is left for the
// worker to report, so the API can say why.
func describeModel(cfg Config) (*core.Model, error) {
	if cfg.ModelPath == "" {
		return nil, &UsageError{"no model given; pass the path of a .gguf file: superfluid serve path/to/model.gguf"}
	}
	path, err := filepath.Abs(cfg.ModelPath)
	if err != nil {
		return nil, &UsageError{fmt.Sprintf("model path %s: %v", cfg.ModelPath, err)}
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, &UsageError{fmt.Sprintf("model file %s does not exist; pass the path of a .gguf file", cfg.ModelPath)}
	case err != nil:
		return nil, &UsageError{fmt.Sprintf("model file %s: %v", cfg.ModelPath, err)}
	case st.IsDir():
		return nil, &UsageError{fmt.Sprintf("%s is a directory; pass the path of a .gguf file inside it", cfg.ModelPath)}
	}
	m := &core.Model{
		ID: strings.TrimSuffix(filepath.Base(path), ".gguf"), Path: path, Size: st.Size(), Created: st.ModTime(),
		ContextLength: cfg.ContextLength,
	}
	f, err := gguf.ReadFile(path)
	switch {
	case errors.Is(err, gguf.ErrNotGGUF):
		return nil, &UsageError{fmt.Sprintf("%s is not a GGUF model file: %v", cfg.ModelPath, err)}
	case err != nil:
		slog.Warn("model file is damaged; the worker will report why it cannot load", "model", path, "err", err)
	default:
		m.Architecture = f.Architecture()
		if m.ContextLength == 0 {
			m.ContextLength = min(f.ContextLength(), 4096)
		}
		m.BOS, m.EOS = specialText(f, "bos"), specialText(f, "eos")
		if fim, ok := f.FIMTokens(); ok {
			m.FIM = &core.FIMTokens{Prefix: fim.Prefix, Suffix: fim.Suffix, Middle: fim.Middle}
		}
	}
	source := ""
	if f != nil {
		source = f.ChatTemplate()
	}
	if m.Template, err = chat.Parse(source); err != nil {
		slog.Warn("the model's chat template does not compile; using the fallback", "model", path, "err", err)
		m.Template, _ = chat.Parse("")
	}
	return m, nil
}

func specialText(f *gguf.File, name string) string {
	id, ok := f.SpecialToken(name)
	if !ok {
		return ""
	}
	text, _ := f.TokenText(id)
	return text
}
