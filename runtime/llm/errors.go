package llm

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors; dialects map them to their status codes and error types.
var (
	ErrModelNotFound = errors.New("model not found")
	ErrContextLength = errors.New("context length exceeded")
	ErrInvalidInput  = errors.New("invalid input")
	// ErrEngineFailure covers a worker that died or a model that failed to load.
	ErrEngineFailure = errors.New("engine or worker failure")
	ErrOverloaded    = errors.New("overloaded")
	// ErrModelFault is a model that gave no token to sample (every logit NaN or infinite: its
	// weights are broken). It is an engine failure (a 500) that no prompt caused, so it never
	// counts against the prompt (quarantine).
	ErrModelFault = fmt.Errorf("%w: the model produced no finite logit (its weights may be broken); use another model file", ErrEngineFailure)
)

// ContextLengthError says by how much a prompt missed the window.
type ContextLengthError struct {
	PromptTokens  int
	ContextLength int
	// Bytes, when set, is the length of a prompt refused before it was tokenized because no
	// tokenization of that many bytes could fit; PromptTokens is then a lower bound.
	Bytes int
}

// raiseWindow says where the window is raised: the server's --ctx, or one model's context
// length in the desktop app's settings (Models tab) when the server runs inside it.
const raiseWindow = "shorten the conversation, or raise the model's context length (--ctx, or the model's settings in the desktop app)"

func (e *ContextLengthError) Error() string {
	if e.Bytes > 0 {
		return fmt.Sprintf("the prompt is %d bytes, at least %d tokens, but the context window is %d tokens; %s",
			e.Bytes, e.PromptTokens, e.ContextLength, raiseWindow)
	}
	return fmt.Sprintf("the prompt is %d tokens but the context window is %d tokens; %s",
		e.PromptTokens, e.ContextLength, raiseWindow)
}

// Unwrap lets errors.Is(err, ErrContextLength) match.
func (e *ContextLengthError) Unwrap() error { return ErrContextLength }

// OverloadedError says the model's lanes and queue are full, and when to try again.
type OverloadedError struct {
	Limit      int
	RetryAfter time.Duration
}

func (e *OverloadedError) Error() string {
	return fmt.Sprintf("the server is busy: %d requests are running or waiting for this model; retry after %s", e.Limit, e.RetryAfter)
}

// Unwrap lets errors.Is(err, ErrOverloaded) match.
func (e *OverloadedError) Unwrap() error { return ErrOverloaded }

// RetryAfterSeconds is the whole seconds a client should wait, at least 1.
func RetryAfterSeconds(err error) int {
	var oe *OverloadedError
	if errors.As(err, &oe) {
		return max(1, int((oe.RetryAfter+time.Second-1)/time.Second))
	}
	return 1
}

// StatusError is a refusal that carries its own HTTP status and machine-readable code (team
// mode's 403 gpu_reserved, 503 model_switching, 502 upstream_error, 429 quota_exceeded). Every
// dialect renders it with the error type its status goes with, and the code where its shape
// has one (OpenAI's).
type StatusError struct {
	Status  int
	Code    string
	Message string
	// RetryAfter, when above 0, is sent as Retry-After (rounded up to whole seconds).
	RetryAfter time.Duration
}

func (e *StatusError) Error() string { return e.Message }

// RetryAfterSeconds is the Retry-After header's value for e: 0 (none) when RetryAfter is not set.
func (e *StatusError) RetryAfterSeconds() int {
	if e.RetryAfter <= 0 {
		return 0
	}
	return int((e.RetryAfter + time.Second - 1) / time.Second)
}
