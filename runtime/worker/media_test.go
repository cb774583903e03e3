package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

// TestProjectorFlag: Options.ProjectorPath reaches the worker as --mmproj.
func TestProjectorFlag(t *testing.T) {
	c, _ := started(t, "ok", func(o *Options) { o.ProjectorPath = "/models/mmproj-f16.gguf" })
	if got := c.Info().Projector; got != "/models/mmproj-f16.gguf" {
		t.Fatalf("the worker saw projector %q", got)
	}
	plain, _ := started(t, "ok")
	if got := plain.Info().Projector; got != "" {
		t.Fatalf("a worker without a projector saw %q", got)
	}
}

// TestLoadRefusedForInput: a worker that refuses its files (a projector for another model)
// fails Start with its own message as invalid input matching ErrLoad, not as an engine
// failure, so the app answers 400 rather than 500.
func TestLoadRefusedForInput(t *testing.T) {
	c, _ := newClient(t, "bad-projector", func(o *Options) { o.ProjectorPath = "/models/mmproj-other.gguf" })
	err := c.Start(context.Background())
	if !errors.Is(err, llm.ErrInvalidInput) || !errors.Is(err, ErrLoad) || errors.Is(err, llm.ErrEngineFailure) {
		t.Fatalf("Start: %v; want invalid input and ErrLoad, not an engine failure", err)
	}
	if want := "invalid input: the projector /models/mmproj-other.gguf does not fit the model bad-projector"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	other, _ := newClient(t, "fail-load")
	if err := other.Start(context.Background()); !errors.Is(err, llm.ErrEngineFailure) || !errors.Is(err, ErrLoad) || errors.Is(err, llm.ErrInvalidInput) {
		t.Errorf("a malformed model: %v; want an engine failure matching ErrLoad", err)
	}
}

// TestUnsupportedInputCrossesTheSocket: the engine's llm.ErrUnsupportedInput reaches the
// client as itself (the core's 400 unsupported_input), not as plain invalid input.
func TestUnsupportedInputCrossesTheSocket(t *testing.T) {
	err := toWire(fmt.Errorf("%w: the model has no projector", llm.ErrUnsupportedInput)).err()
	if !errors.Is(err, llm.ErrUnsupportedInput) || !strings.Contains(err.Error(), "no projector") {
		t.Fatalf("%v; want ErrUnsupportedInput with the engine's message", err)
	}
	if err := toWire(llm.ErrInvalidInput).err(); errors.Is(err, llm.ErrUnsupportedInput) {
		t.Errorf("plain invalid input came back unsupported: %v", err)
	}
}
