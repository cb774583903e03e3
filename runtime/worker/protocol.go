// Package worker runs an llm.Engine in a separate process and talks to it over a unix socket.
//
// The app process starts `superfluid worker`, which loads one model and serves it with Serve;
// the app's Client implements llm.Engine by forwarding calls over the socket, restarting the
// worker when it has died. A llama.cpp abort therefore costs the requests in flight (they get
// llm.ErrEngineFailure), never the app.
//
// Protocol: one connection per call. The client writes one JSON call line; the worker answers
// with JSON reply lines, the last one carrying End. Closing the connection cancels the call.
// Before serving, the worker prints one JSON hello line on stdout: the model info, or the
// load error. A ping call is answered by the socket server alone, never by the engine, so a
// worker that stops answering pings is hung (not merely busy) and the client kills it.
//
// Lifecycle: a Client starts its worker on the first call, restarts it after it died, stops it
// on Unload (and starts a new one on the next call) and for good on Close.
package worker

import (
	"errors"
	"fmt"

	"github.com/superfluid/superfluid/runtime/llm"
)

// Call kinds.
const (
	opGenerate = "generate"
	opTokenize = "tokenize"
	opSlots    = "slots"
	opEmbed    = "embed"
	opPing     = "ping"
	// opReleaseAdapter frees a LoRA adapter the engine loaded (llm.AdapterReleaser).
	opReleaseAdapter = "release_adapter"
)

type call struct {
	Op           string            `json:"op"`
	Generate     *llm.Request      `json:"generate,omitempty"`
	Embed        *llm.EmbedRequest `json:"embed,omitempty"`
	Text         string            `json:"text,omitempty"`
	AddSpecial   bool              `json:"add_special,omitempty"`
	ParseSpecial bool              `json:"parse_special,omitempty"`
	// Path is the adapter file of opReleaseAdapter.
	Path string `json:"path,omitempty"`
}

type reply struct {
	Event  *llm.Event       `json:"event,omitempty"`
	Tokens []int            `json:"tokens,omitempty"`
	Slots  *llm.Slots       `json:"slots,omitempty"`
	Embed  *llm.EmbedResult `json:"embed,omitempty"`
	End    bool             `json:"end,omitempty"`
	Error  *wireError       `json:"error,omitempty"`
}

// hello is the worker's first stdout line. Kind is kindInvalidInput when the load failed
// because of the files asked for (a projector made for another model), "" otherwise.
type hello struct {
	Info  *llm.ModelInfo `json:"info,omitempty"`
	Error string         `json:"error,omitempty"`
	Kind  string         `json:"kind,omitempty"`
}

// LoadError is the hello line of a worker whose model did not load with err.
func LoadError(err error) any {
	h := hello{Error: err.Error()}
	if errors.Is(err, llm.ErrInvalidInput) {
		h.Kind = kindInvalidInput
	}
	return h
}

// wireError carries a typed engine error across the socket.
type wireError struct {
	Kind          string `json:"kind"`
	Message       string `json:"message"`
	PromptTokens  int    `json:"prompt_tokens,omitempty"`
	ContextLength int    `json:"context_length,omitempty"`
}

const (
	kindContextLength = "context_length"
	kindInvalidInput  = "invalid_input"
	kindUnsupported   = "unsupported_model"
	// kindUnsupportedInput is llm.ErrUnsupportedInput: media the model cannot take.
	kindUnsupportedInput = "unsupported_input"
	kindEngine           = "engine"
	kindModelFault       = "model_fault" // llm.ErrModelFault: the model's fault, not the prompt's
	// kindFatal is an engine failure after which the engine is beyond repair: the worker exits
	// right after answering, and the client starts a new one.
	kindFatal = "fatal"
)

func toWire(err error) *wireError {
	var cl *llm.ContextLengthError
	switch {
	case errors.As(err, &cl):
		return &wireError{Kind: kindContextLength, Message: err.Error(), PromptTokens: cl.PromptTokens, ContextLength: cl.ContextLength}
	case errors.Is(err, llm.ErrUnsupportedModel):
		return &wireError{Kind: kindUnsupported, Message: err.Error()}
	case errors.Is(err, llm.ErrUnsupportedInput):
		return &wireError{Kind: kindUnsupportedInput, Message: err.Error()}
	case errors.Is(err, llm.ErrInvalidInput):
		return &wireError{Kind: kindInvalidInput, Message: err.Error()}
	case errors.Is(err, llm.ErrModelFault):
		return &wireError{Kind: kindModelFault, Message: err.Error()}
	default:
		return &wireError{Kind: kindEngine, Message: err.Error()}
	}
}

func (w *wireError) err() error {
	switch w.Kind {
	case kindContextLength:
		return &llm.ContextLengthError{PromptTokens: w.PromptTokens, ContextLength: w.ContextLength}
	case kindUnsupported:
		return remoteError{sentinel: llm.ErrUnsupportedModel, msg: w.Message}
	case kindUnsupportedInput:
		return remoteError{sentinel: llm.ErrUnsupportedInput, msg: w.Message}
	case kindInvalidInput:
		return remoteError{sentinel: llm.ErrInvalidInput, msg: w.Message}
	case kindModelFault:
		return remoteError{sentinel: llm.ErrModelFault, msg: w.Message}
	default:
		return remoteError{sentinel: llm.ErrEngineFailure, msg: w.Message}
	}
}

// remoteError keeps the worker's message while matching the sentinel with errors.Is.
type remoteError struct {
	sentinel error
	msg      string
}

func (e remoteError) Error() string { return e.msg }
func (e remoteError) Unwrap() error { return e.sentinel }

func engineFailure(format string, args ...any) error {
	return fmt.Errorf("%w: %s", llm.ErrEngineFailure, fmt.Sprintf(format, args...))
}

var (
	// ErrWorkerExited matches failures caused by the worker process dying, or being killed
	// (hung, unloaded under a call, its engine broken), during a call or while loading. It
	// always comes with llm.ErrEngineFailure.
	ErrWorkerExited = errors.New("worker exited")
	// ErrLoad matches a load the worker refused with an error of its own (a missing, unreadable
	// or malformed model file). It comes with llm.ErrEngineFailure, or with llm.ErrInvalidInput
	// when the files were asked for wrongly (a projector made for another model: a 400).
	ErrLoad = errors.New("model load failed")
)

// failure is an llm.ErrEngineFailure that also matches a kind: ErrWorkerExited or ErrLoad.
// With input set it is an llm.ErrInvalidInput instead, its message the worker's own.
type failure struct {
	kind  error
	msg   string
	input bool
}

func (e *failure) Error() string {
	if e.input {
		return e.msg
	}
	return llm.ErrEngineFailure.Error() + ": " + e.msg
}

func (e *failure) Unwrap() []error {
	if e.input {
		return []error{llm.ErrInvalidInput, e.kind}
	}
	return []error{llm.ErrEngineFailure, e.kind}
}

func workerFailure(kind error, format string, args ...any) error {
	return &failure{kind: kind, msg: fmt.Sprintf(format, args...)}
}
