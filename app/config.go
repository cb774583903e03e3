// Package app is the composition root: it turns flags into one Config, opens the store,
// starts the model's worker, wires the core and the HTTP server, and runs the subcommands
// (serve, worker, bench).
package app

import (
	"io"
	"os"
	"time"
)

// Config is everything the program is told, built once from flags (and later settings).
type Config struct {
	Host string
	Port int
	// ModelPath is the GGUF file to serve.
	ModelPath string
	// ContextLength is one request's window (prompt + completion); 0 = the model's, capped at 4096.
	ContextLength int
	Parallel      int
	Threads       int
	// MaxTokens caps completions that name no cap; 0 fills the context.
	MaxTokens int
	// Queue bounds the generations waiting for a lane; past it requests get 429.
	Queue int
	// CompletionBurst and CompletionRate are the per-client fill-in-the-middle token bucket;
	// CompletionDeadline cuts fill-in-the-middle generations (0 = none).
	CompletionBurst    int
	CompletionRate     float64
	CompletionDeadline time.Duration
	// DataDir holds everything the server writes (the database, later files and caches).
	DataDir string
	// KeepAlive is the SSE keep-alive interval.
	KeepAlive time.Duration
	// WorkerCommand starts a worker process: the program and its leading arguments.
	WorkerCommand []string
	// WorkerEnv is added to the worker's environment.
	WorkerEnv []string
	// WorkerLog receives the workers' stderr (llama.cpp's log); nil discards it.
	WorkerLog io.Writer
}

// DefaultConfig is the configuration before flags.
func DefaultConfig() Config {
	return Config{
		Host:            "127.0.0.1",
		Port:            8453,
		Parallel:        4,
		Queue:           64,
		CompletionBurst: 20,
		CompletionRate:  10,
		KeepAlive:       5 * time.Second,
		DataDir:         defaultDataDir(),
		WorkerCommand:   selfCommand("worker"),
	}
}

// selfCommand runs this same binary with a subcommand.
func selfCommand(sub string) []string {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return []string{exe, sub}
}
