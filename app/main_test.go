package app

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/superfluid/superfluid/app/desktop"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

// workerEnv makes the test binary act as the worker process: the app's tests start real
// workers (real llama.cpp) by re-running this binary.
const workerEnv = "SUPERFLUID_TEST_WORKER"

// testModel is the model the end-to-end tests serve: stories260K from ../shared when present,
// else a tiny llama the suite writes itself.
var testModel string

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		os.Exit(Main(append([]string{"superfluid", "worker"}, os.Args[1:]...), os.Stdout, os.Stderr))
	}
	if os.Getenv(cliEnv) == "1" {
		os.Exit(Main(append([]string{"superfluid"}, os.Args[1:]...), os.Stdout, os.Stderr))
	}
	dir, err := os.MkdirTemp("", "superfluid-app-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testModel = filepath.Join("..", "..", "shared", "models", "stories260K.gguf")
	if _, err := os.Stat(testModel); err != nil {
		testModel = filepath.Join(dir, "tiny.gguf")
		if err := gguftest.WriteTinyLlama(testModel, gguftest.TinyLlamaOptions{}); err != nil {
			fmt.Fprintln(os.Stderr, "write tiny model:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// testConfig is a Config whose workers are this test binary.
func testConfig(t *testing.T, model string) Config {
	t.Helper()
	cfg := DefaultConfig()
	cfg.ModelPath = model
	cfg.DataDir = t.TempDir()
	cfg.ContextLength = 512
	cfg.Parallel = 2
	cfg.KeepAlive = time.Second
	cfg.WorkerCommand = []string{os.Args[0]}
	cfg.WorkerEnv = []string{workerEnv + "=1"}
	return cfg
}

// startServer runs the whole app behind httptest and waits for the model to load.
func startServer(t *testing.T, cfg Config, waitLoaded bool) (*App, *httptest.Server) {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(func() {
		srv.Close()
		a.Close()
	})
	if waitLoaded {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := a.Worker().Start(ctx); err != nil {
			t.Fatalf("worker start: %v", err)
		}
	}
	return a, srv
}

// openController opens the app from cfg with the desktop's controller over it, both closed
// when the test ends (the controller first).
func openController(t *testing.T, cfg Config) (*App, *desktop.Controller) {
	t.Helper()
	a, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	c := newController(a)
	t.Cleanup(func() { c.Close() })
	return a, c
}
