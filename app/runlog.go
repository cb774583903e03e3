package app

import (
	"io"
	"log"
	"log/slog"

	"github.com/superfluid/superfluid/server/runlog"
)

// installRuntimeLog gives team mode its runtime log (the admin's /api/admin/runtime/log): the
// default logger tees every record into a runlog.Log and on to stderr in slog's default
// format, and the workers' stderr (llama.cpp's log) goes into it too, on to stderr only with
// --verbose. Outside team mode nothing changes. The returned func puts the previous logger
// back (the log package's output included, which slog.SetDefault redirects).
func installRuntimeLog(cfg *Config, stderr io.Writer, verbose bool) (restore func()) {
	if !cfg.Team {
		if verbose {
			cfg.WorkerLog = stderr
		}
		return func() {}
	}
	rl := runlog.New(runlog.Config{})
	cfg.RuntimeLog = rl
	var workerStderr io.Writer
	if verbose {
		workerStderr = stderr
	}
	cfg.WorkerLog = rl.Writer(workerStderr, slog.String("source", "worker"))

	prev, prevOut, prevFlags := slog.Default(), log.Writer(), log.Flags()
	slog.SetDefault(slog.New(rl.Handler(runlog.PlainHandler(stderr))))
	return func() {
		slog.SetDefault(prev)
		log.SetOutput(prevOut)
		log.SetFlags(prevFlags)
	}
}
