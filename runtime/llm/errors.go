package llm

import (
	"errors"
	"fmt"
)

// Sentinel errors; dialects map them to their status codes and error types.
var (
	ErrModelNotFound = errors.New("model not found")
	ErrContextLength = errors.New("context length exceeded")
	ErrInvalidInput  = errors.New("invalid input")
	// ErrEngineFailure covers a worker that died or a model that failed to load.
	ErrEngineFailure = errors.New("engine or worker failure")
	ErrOverloaded    = errors.New("overloaded")
)

// ContextLengthError says by how much a prompt missed the window.
type ContextLengthError struct {
	PromptTokens  int
	ContextLength int
}

func (e *ContextLengthError) Error() string {
	return fmt.Sprintf("the prompt is %d tokens but the context window is %d tokens; shorten the conversation or start the server with a larger --ctx",
		e.PromptTokens, e.ContextLength)
}

// Unwrap lets errors.Is(err, ErrContextLength) match.
func (e *ContextLengthError) Unwrap() error { return ErrContextLength }
