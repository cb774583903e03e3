// Package lanes is team mode's serving floor: the machine's devices, the lanes on them (a named
// slot that serves one model at a time through an engine: the built-in worker, an
// OpenAI-compatible server, or a supervised command), their model switches that drain running
// requests first, and the Router that picks a lane by a request's model field, who sent it and
// who booked what (the spec's "The model field"). Engines are built by an EngineFactory the
// composition root gives; bookings come in through the Reservations interface. It knows nothing
// of HTTP.
package lanes

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/store"
)

// Kind is how a lane's engine serves its model.
type Kind string

// The engine kinds.
const (
	Local   Kind = "local"   // the built-in llama.cpp worker, a catalog model
	OpenAI  Kind = "openai"  // an OpenAI-compatible server at a URL
	Command Kind = "command" // a server process superfluid starts and supervises
)

// ParseKind checks an engine kind's name.
func ParseKind(s string) (Kind, error) {
	switch k := Kind(s); k {
	case Local, OpenAI, Command:
		return k, nil
	}
	return "", fmt.Errorf("%w %q: use local, openai or command", ErrUnknownEngine, s)
}

// State is where a lane stands.
type State string

// The lane states.
const (
	// Serving: requests reach the lane's model.
	Serving State = "serving"
	// Switching: requests that were running finish; new ones get 503 model_switching.
	Switching State = "switching"
	// Unavailable: the engine is starting, failed to start or is not healthy; requests get
	// 503 model_unavailable.
	Unavailable State = "unavailable"
)

// Errors of lane management (the admin API and the CLI map them to their statuses).
var (
	ErrLaneExists    = errors.New("a lane already has this name")
	ErrLaneNotFound  = errors.New("no such lane")
	ErrUnknownDevice = errors.New("unknown device")
	ErrUnknownEngine = errors.New("unknown engine kind")
	ErrUnknownModel  = errors.New("unknown model")
	ErrInvalidLane   = errors.New("invalid lane")
)

// How long a refused client is told to wait.
const (
	SwitchingRetryAfter   = 2 * time.Second
	UnavailableRetryAfter = 5 * time.Second
)

// Spec is what an engine is built from: the lane's row (its model is the one to serve) and the
// upstream key the row keeps write-only.
type Spec struct {
	Lane        store.Lane
	UpstreamKey string
}

// EngineFactory builds the engine serving spec.Lane.Model: a *core.Model (a catalog model for
// local, a forwarding model for openai, a supervised process's for command) and release, called
// once the lane no longer serves it (after its requests drained). It returns once the engine
// can take requests, or an error (the lane stays unavailable and retries with backoff). The
// lane wraps the model's engine to count its requests; the factory's model is not served
// as is. When the model's Engine has a Healthy() bool method, the lane is unavailable while it
// reports false (a supervised process restarting).
type EngineFactory func(ctx context.Context, spec Spec) (model *core.Model, release func(), err error)

// Catalog resolves registered models by name (*core.Service does): a local lane's model must be
// one, and the router tells a known name from an unknown one by it.
type Catalog interface {
	Model(name string) (*core.Model, error)
}

// switching is the refusal while a lane drains.
func switching(lane, model string) error {
	return &llm.StatusError{Status: http.StatusServiceUnavailable, Code: "model_switching", RetryAfter: SwitchingRetryAfter,
		Message: fmt.Sprintf("lane %s is switching to %s: running requests are finishing; retry after the Retry-After", lane, model)}
}

// unavailable is the refusal while a lane's engine starts or after it failed.
func unavailable(lane, model string, cause error) error {
	msg := fmt.Sprintf("the model %s on lane %s is loading; retry after the Retry-After", model, lane)
	if cause != nil {
		msg = fmt.Sprintf("the model %s on lane %s failed to start (%v); retrying, retry after the Retry-After", model, lane, cause)
	}
	return &llm.StatusError{Status: http.StatusServiceUnavailable, Code: "model_unavailable", RetryAfter: UnavailableRetryAfter, Message: msg}
}
