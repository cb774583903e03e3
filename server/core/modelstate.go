package core

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/models"
)

// What the dialects and the metrics need of the model manager, named by the core so that they
// speak to the core only (the import test keeps runtime/models out of them).

// ModelStatus is a model's runtime state (Service.ModelStatus): one of the Model* states, the
// memory it needs, when it unloads, its requests in flight.
type ModelStatus = models.Status

// Model states, as the manager reports them and the dialects show them.
const (
	ModelUnloaded  = models.StateUnloaded
	ModelLoading   = models.StateLoading
	ModelLoaded    = models.StateLoaded
	ModelUnloading = models.StateUnloading
	ModelFailed    = models.StateFailed
	ModelMissing   = models.StateMissing
)

// ParseKeepAlive reads a keep_alive value with the syntax every dialect shares (Ollama's: a
// duration string, a number of seconds, negative keeps the model loaded; nil is the server's
// default). A bad value wraps llm.ErrInvalidInput.
func ParseKeepAlive(raw json.RawMessage) (*time.Duration, error) { return models.ParseKeepAlive(raw) }

// Quantization names a model file's quantization as the catalog does ("Q4_K_M").
func Quantization(f *gguf.File) string { return models.Quantization(f, nil) }

// PullProgress is one file's download during PullModel: its status (PullPulling,
// PullVerifying, PullDone), digest and bytes.
type PullProgress = models.Progress

// Pull progress statuses.
const (
	PullPulling   = models.StatusPulling
	PullVerifying = models.StatusVerifying
	PullDone      = models.StatusDone
)

// ErrIsAdapter refuses a catalog LoRA adapter's id where a model is wanted (a 400 saying whose
// adapter it is); DeleteModel still removes it.
var ErrIsAdapter = models.ErrIsAdapter

// ErrNotReference reports a name none of the core's sources pulls (CheckReference).
var ErrNotReference = models.ErrNotReference

// CheckReference reports whether PullModel could read reference: nil, an error wrapping
// ErrNotReference when no source pulls such names, or the source's word on a malformed one.
func (s *Service) CheckReference(reference string) error {
	if s.source == nil {
		return fmt.Errorf("model %q: %w: this server pulls from no source", reference, ErrNotReference)
	}
	_, err := s.source.Parse(reference)
	return err
}

// ModelEvent is a change in the model manager: a load, a failed load, an unload, pull
// progress, a catalog change (Kind is one of the ModelEvent* kinds).
type ModelEvent = models.Event

// Model event kinds.
const (
	ModelEventLoading  = models.EventLoading
	ModelEventLoaded   = models.EventLoaded
	ModelEventUnloaded = models.EventUnloaded
	ModelEventFailed   = models.EventFailed
	ModelEventPull     = models.EventPull
	ModelEventCatalog  = models.EventCatalog
)

// ModelEvents subscribes to the manager's events with room for buffer of them (a subscriber
// that falls behind misses events) until stop is called. A fixed set of models has none.
func (s *Service) ModelEvents(buffer int) (events <-chan ModelEvent, stop func()) {
	if s.mgr == nil {
		return nil, func() {}
	}
	return s.mgr.Subscribe(buffer)
}

// EventModelID is the catalog id of an event's model: the manager names unloads by the
// model's file path, loads by its id.
func (s *Service) EventModelID(name string) string {
	if s.mgr == nil {
		return name
	}
	for _, e := range s.mgr.Catalog().List() {
		if e.ID == name || e.Path == name {
			return e.ID
		}
	}
	return name
}
