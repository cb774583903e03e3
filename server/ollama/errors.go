package ollama

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/dialect"
)

// Error is an Ollama API error with its HTTP status. On the wire it is {"error": "..."}.
type Error struct {
	Status  int
	Message string
	// RetryAfter, when set, is sent as the Retry-After header (seconds).
	RetryAfter int
}

func (e *Error) Error() string { return e.Message }

// badRequest is a 400 with msg.
func badRequest(format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Message: fmt.Sprintf(format, args...)}
}

// notFound is Ollama's 404 for a model it does not have, in Ollama's words.
func notFound(name string) *Error {
	return &Error{Status: http.StatusNotFound, Message: fmt.Sprintf("model %q not found, try pulling it first", name)}
}

// unsupported is the 400 Ollama answers when a model lacks a capability ("does not support insert").
func unsupported(model, capability, next string) *Error {
	return badRequest("%q does not support %s; %s", model, capability, next)
}

// errorBody is the wire shape of every Ollama error, and of the last line of a failed stream.
type errorBody struct {
	Error string `json:"error"`
}

// toError maps any error to the Ollama error it is shown as.
func toError(err error) *Error {
	var e *Error
	var r *dialect.Refusal
	var se *llm.StatusError
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &r):
		return fromRefusal(r)
	case errors.As(err, &se):
		return fromRefusal(&dialect.Refusal{Status: se.Status, Code: se.Code, Message: se.Message, RetryAfter: se.RetryAfterSeconds()})
	case errors.Is(err, llm.ErrContextLength), errors.Is(err, llm.ErrInvalidInput):
		return &Error{Status: http.StatusBadRequest, Message: err.Error()}
	case errors.Is(err, llm.ErrModelNotFound):
		return &Error{Status: http.StatusNotFound, Message: err.Error()}
	case errors.Is(err, core.ErrAdminRequired):
		return &Error{Status: http.StatusForbidden, Message: err.Error()}
	case errors.Is(err, llm.ErrOverloaded):
		// Ollama answers a full queue with 503 ("server busy, please try again").
		return &Error{Status: http.StatusServiceUnavailable, Message: "server busy, please try again: " + err.Error(),
			RetryAfter: llm.RetryAfterSeconds(err)}
	case errors.Is(err, context.Canceled):
		return &Error{Status: 499, Message: "request canceled"}
	default:
		return &Error{Status: http.StatusInternalServerError, Message: err.Error()}
	}
}

// Handler is a route that returns its error instead of writing it.
type Handler func(c *gin.Context) error

// Handle adapts h to gin, rendering a returned error as Ollama does (unless the handler
// already began its response, in which case it reported the error itself).
func Handle(h Handler) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := h(c); err != nil && !c.Writer.Written() {
			WriteError(c, err)
		}
	}
}

// WriteError renders err as an Ollama error response: {"error": "..."} with its status.
func WriteError(c *gin.Context, err error) {
	e := toError(err)
	if e.RetryAfter > 0 {
		c.Header("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	c.JSON(e.Status, errorBody{Error: e.Message})
}
