package app

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/store"
)

// TestSpeculativeFlag: --speculative takes off, ngram or draft; its default is
// defaultSpeculative; anything else is a usage error.
func TestSpeculativeFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
		bad  bool
	}{
		{nil, defaultSpeculative, false},
		{[]string{"--speculative", "off"}, llm.SpecOff, false},
		{[]string{"--speculative=draft"}, llm.SpecDraft, false},
		{[]string{"--speculative", "medusa"}, "", true},
		{[]string{"--speculative", ""}, "", true},
	} {
		cfg := DefaultConfig()
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		serverFlags(fs, &cfg)
		err := fs.Parse(tc.args)
		if (err != nil) != tc.bad || (!tc.bad && cfg.Speculative != tc.want) {
			t.Errorf("%v: speculative %q, err %v", tc.args, cfg.Speculative, err)
		}
	}
}

// TestSpeedSettingsReachTheWorker: a model's speculation, draft model and attention settings
// go from the store through the core and the manager to its worker's command line, and a
// model without them starts with --speculative's default. The worker is the real one, run
// through a script that keeps its arguments.
func TestSpeedSettingsReachTheWorker(t *testing.T) {
	cfg := testConfig(t, testModel)
	argsFile := filepath.Join(t.TempDir(), "args")
	script := filepath.Join(t.TempDir(), "worker.sh")
	body := "#!/bin/sh\necho \"$@\" >> " + argsFile + "\nexec " + os.Args[0] + " \"$@\"\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.WorkerCommand = []string{script}
	a, _ := startServer(t, cfg, false)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id := a.preload.ID
	lastArgs := func() string {
		t.Helper()
		b, err := os.ReadFile(argsFile)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		return " " + lines[len(lines)-1] + " "
	}
	if _, err := a.svc.LoadModel(ctx, id); err != nil {
		t.Fatal(err)
	}
	if args := lastArgs(); !strings.Contains(args, " --speculative "+defaultSpeculative+" ") || strings.Contains(args, "--draft-model") {
		t.Errorf("no settings: worker args %s", args)
	}
	set := store.ModelSettings{ModelID: id, Speculative: llm.SpecDraft, DraftModel: testModel, DraftTokens: 5, FlashAttention: "off"}
	if err := a.svc.SetModelSettings(ctx, set); err != nil {
		t.Fatal(err)
	}
	if _, err := a.svc.LoadModel(ctx, id); err != nil {
		t.Fatal(err)
	}
	args := lastArgs()
	for _, want := range []string{" --speculative draft ", " --draft-model " + testModel + " ", " --draft-tokens 5 ", " --flash-attn off "} {
		if !strings.Contains(args, want) {
			t.Errorf("worker args %s lack %q", args, want)
		}
	}
}
