// Package openai is the OpenAI dialect and its llama-server-style extensions: chat completions
// and completions (/v1/chat/completions, /v1/completions), the Responses API (/v1/responses and
// its reads), embeddings and rerank (/v1/embeddings, /v1/rerank), files and batches (/v1/files,
// /v1/batches), models (/v1/models, load, unload, delete; Anthropic clients get their shape
// through hooks), tokenize (/v1/tokenize), and llama-server's /health, /props and /slots. It
// decodes wire JSON straight into core requests, renders core results and events as OpenAI's
// JSON and SSE, and renders every error in OpenAI's error shape.
package openai

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/dialect"
)

// Error is an OpenAI API error with its HTTP status.
type Error struct {
	Status int
	// RetryAfter, when set, is sent as the Retry-After header (seconds).
	RetryAfter int
	Type       string
	Code       string
	Param      string
	Message    string
}

func (e *Error) Error() string { return e.Message }

// invalid is a 400 invalid_request_error naming the parameter at fault.
func invalid(param, msg string) *Error {
	return &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: param, Message: msg}
}

// unsupported is a 400 for a parameter this server does not serve (yet): never silently dropped.
func unsupported(param, msg string) *Error {
	return &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "unsupported_parameter", Param: param, Message: msg}
}

// body is the wire shape: {"error": {"message", "type", "param", "code"}}.
type body struct {
	Error wireError `json:"error"`
}

type wireError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// toError maps any error to the OpenAI error it is shown as.
func toError(err error) *Error {
	var e *Error
	var cl *llm.ContextLengthError
	var ce *core.ChoicesError
	var r *dialect.Refusal
	var se *llm.StatusError
	var me *core.MediaError
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &r):
		return fromRefusal(r)
	case errors.As(err, &se):
		return fromRefusal(&dialect.Refusal{Status: se.Status, Code: se.Code, Message: se.Message, RetryAfter: se.RetryAfterSeconds()})
	case errors.Is(err, core.ErrAdminRequired):
		return &Error{Status: http.StatusForbidden, Type: "permission_error", Code: "admin_required", Message: err.Error()}
	case errors.Is(err, core.ErrUnsupportedRuntime):
		return &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "unsupported_runtime", Param: "runtime", Message: err.Error()}
	case errors.Is(err, llm.ErrUnsupportedModel):
		return unsupportedModel(err)
	case errors.Is(err, core.ErrFIMUnsupported):
		return &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "fim_unsupported", Param: "suffix", Message: err.Error()}
	case errors.As(err, &cl):
		return &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "context_length_exceeded", Param: "messages", Message: err.Error()}
	case errors.Is(err, llm.ErrModelNotFound):
		return &Error{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "model_not_found", Param: "model", Message: err.Error()}
	case errors.As(err, &ce):
		return invalid("n", err.Error())
	case errors.Is(err, llm.ErrUnsupportedInput):
		e := unsupportedInput("", err.Error())
		if errors.As(err, &me) {
			e.Param = me.Where
		}
		return e
	case errors.As(err, &me):
		return invalid(me.Where, err.Error())
	case errors.Is(err, llm.ErrInvalidInput):
		return &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: err.Error()}
	case errors.Is(err, llm.ErrOverloaded):
		return &Error{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "concurrency_limit_exceeded",
			Message: err.Error(), RetryAfter: llm.RetryAfterSeconds(err)}
	case errors.Is(err, context.Canceled):
		return &Error{Status: 499, Type: "invalid_request_error", Message: "the client closed the request"}
	default:
		return &Error{Status: http.StatusInternalServerError, Type: "server_error", Message: err.Error()}
	}
}

func (e *Error) wire() body {
	w := wireError{Message: e.Message, Type: e.Type}
	if e.Param != "" {
		w.Param = &e.Param
	}
	if e.Code != "" {
		w.Code = &e.Code
	}
	return body{Error: w}
}

// Handler is a route that returns its error instead of writing it.
type Handler func(c *gin.Context) error

// Handle adapts h to gin, rendering a returned error in OpenAI's shape (unless the handler
// already began its response, in which case it reported the error itself).
func Handle(h Handler) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := h(c); err != nil && !c.Writer.Written() {
			WriteError(c, err)
		}
	}
}

// WriteError renders err as an OpenAI error response.
func WriteError(c *gin.Context, err error) {
	e := toError(err)
	if e.RetryAfter > 0 {
		c.Header("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	c.JSON(e.Status, e.wire())
}
