package llamacpp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/worker"
)

// TestMediaThroughWorker: a worker started with --mmproj reports the projector and replies to
// an image prompt, sent over the socket, what the engine replies in process; a worker given a
// projector for another width refuses to load with invalid input naming both files (a 400 at
// /v1/models/load), matching worker.ErrLoad.
func TestMediaThroughWorker(t *testing.T) {
	f := writeMediaFiles(t)[0]
	req := func() *llm.Request { return mediaReq(mediaPrefix, mediaSuffix, 24, testImage(24, 20, 11)) }
	want := mustGenerate(t, loadMedia(t, f.model, f.vision, 1), req())

	c, log := startWorker(t, worker.Options{ModelPath: f.model, ProjectorPath: f.vision, ContextLength: 256, Parallel: 1})
	if info := c.Info(); info.Projector != f.vision || !info.Vision {
		t.Fatalf("worker info: projector %q vision %t; want %s", info.Projector, info.Vision, f.vision)
	}
	var text strings.Builder
	var started *llm.Started
	err := c.Generate(context.Background(), req(), func(ev llm.Event) error {
		if ev.Started != nil {
			started = ev.Started
		}
		text.WriteString(ev.Text)
		return nil
	})
	if err != nil {
		t.Fatalf("generate through the worker: %v\nlog:\n%s", err, log)
	}
	if text.String() != want.text {
		t.Errorf("through the worker %q, in process %q", text.String(), want.text)
	}
	if started == nil || started.PromptTokens != want.started.PromptTokens {
		t.Errorf("worker started %+v, want %d prompt tokens", started, want.started.PromptTokens)
	}
	err = c.Generate(context.Background(), mediaReq("a", "b", 4, testClip(0.5, 440)), func(llm.Event) error { return nil })
	if !errors.Is(err, llm.ErrUnsupportedInput) || !strings.Contains(err.Error(), "no audio encoder") {
		t.Errorf("audio to a vision worker: %v; want unsupported input saying it has no audio encoder", err)
	}

	wide := filepath.Join(t.TempDir(), "mmproj-wide.gguf")
	if err := gguftest.WriteVisionProjector(wide, gguftest.VisionProjectorOptions{TextEmbd: 128}); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bad := worker.NewClient(worker.Options{Command: []string{exe}, Env: []string{workerEnv + "=1"}, ModelPath: f.model,
		ProjectorPath: wide, ContextLength: 128, Parallel: 1, StartTimeout: time.Minute, Log: &lockedBuffer{}})
	defer bad.Close()
	err = bad.Start(context.Background())
	if !errors.Is(err, llm.ErrInvalidInput) || !errors.Is(err, worker.ErrLoad) || errors.Is(err, llm.ErrEngineFailure) {
		t.Fatalf("load with a projector for another width: %v; want invalid input and ErrLoad, not an engine failure", err)
	}
	for _, s := range []string{wide, f.model, "n_embd = 128"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
}
