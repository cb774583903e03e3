package app

import (
	"bytes"
	"log"
	"log/slog"
	"strings"
	"testing"
)

func TestInstallRuntimeLog(t *testing.T) {
	var stderr bytes.Buffer
	cfg := Config{Team: true}
	restore := installRuntimeLog(&cfg, &stderr, false)
	slog.Info("lane switched", "lane", "gpu0")
	log.Print("from the log package")
	cfg.WorkerLog.Write([]byte("llama: loaded\n"))
	restore()
	slog.Info("after restore") // goes to the test's stderr, not the ring

	if cfg.RuntimeLog == nil {
		t.Fatal("team mode got no runtime log")
	}
	var got []string
	for _, l := range cfg.RuntimeLog.Recent(10) {
		got = append(got, l.Message)
	}
	if strings.Join(got, "|") != "lane switched|from the log package|llama: loaded" {
		t.Errorf("runtime log = %q", got)
	}
	out := stderr.String()
	if !strings.Contains(out, "INFO lane switched lane=gpu0\n") || !strings.Contains(out, "from the log package") || strings.Contains(out, "llama") || strings.Contains(out, "after restore") {
		t.Errorf("stderr = %q, want the slog lines only (worker lines need --verbose)", out)
	}

	plain := Config{}
	installRuntimeLog(&plain, &stderr, true)()
	if plain.RuntimeLog != nil || plain.WorkerLog != &stderr {
		t.Errorf("outside team mode: runtime log %v, worker log %v; want none and stderr with --verbose", plain.RuntimeLog, plain.WorkerLog)
	}
}
