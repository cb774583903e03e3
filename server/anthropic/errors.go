// Package anthropic is the Anthropic dialect: POST /v1/messages and /v1/messages/count_tokens.
// It decodes wire JSON straight into core requests (custom tools and tool_choice, tool_use and
// tool_result blocks as tool calls and tool messages, system messages as system turns at their
// place, thinking as the template's enable_thinking, output_config.effort as its
// reasoning_effort, output_config.format as the engine's JSON schema, context_management's
// clear_thinking as a pruned history), renders core results and events as Anthropic's JSON and
// named SSE events (thinking, text and tool_use content blocks), and renders every error in
// Anthropic's error shape {"type":"error","error":{"type","message"},"request_id"}.
//
// What a real client sends is served or ignored, never refused for being new: cache_control,
// metadata, anthropic-beta and ?beta=true are ignored; server tools this server cannot run are
// dropped, and images in tool results too, each with a note in the reply's
// superfluid.warnings.
package anthropic

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/dialect"
)

// Anthropic's error types, with the status each goes with.
const (
	TypeInvalidRequest  = "invalid_request_error" // 400
	TypeAuthentication  = "authentication_error"  // 401
	TypePermission      = "permission_error"      // 403
	TypeNotFound        = "not_found_error"       // 404
	TypeRequestTooLarge = "request_too_large"     // 413
	TypeRateLimit       = "rate_limit_error"      // 429
	TypeAPI             = "api_error"             // 500
	TypeOverloaded      = "overloaded_error"      // 529
)

// StatusOverloaded is Anthropic's status for overloaded_error.
const StatusOverloaded = 529

// RequestIDHeader carries the request's id ("req_..."), which the SDKs report with errors.
const RequestIDHeader = "request-id"

const requestIDKey = "anthropic.request_id" // the id in the gin context

// Error is an Anthropic API error with its HTTP status.
type Error struct {
	Status  int
	Type    string
	Message string
	// RetryAfter, when set, is sent as the retry-after header (seconds); the SDKs wait that long.
	RetryAfter int
}

func (e *Error) Error() string { return e.Message }

// invalid is a 400 invalid_request_error; Anthropic's messages start with the field path
// ("max_tokens: Field required").
func invalid(format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Type: TypeInvalidRequest, Message: fmt.Sprintf(format, args...)}
}

// body is the wire shape of an error response and of an `event: error` frame.
type body struct {
	Type      string    `json:"type"`
	Error     wireError `json:"error"`
	RequestID string    `json:"request_id,omitempty"`
}

type wireError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// toError maps any error to the Anthropic error it is shown as.
func toError(err error) *Error {
	var e *Error
	var cl *llm.ContextLengthError
	var r *dialect.Refusal
	var se *llm.StatusError
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &r):
		return fromRefusal(r)
	case errors.As(err, &se):
		return fromRefusal(&dialect.Refusal{Status: se.Status, Code: se.Code, Message: se.Message, RetryAfter: se.RetryAfterSeconds()})
	case errors.As(err, &cl):
		// Anthropic's exact wording: clients (Claude Code) parse it to decide to compact.
		return invalid("prompt is too long: %d tokens > %d maximum", cl.PromptTokens, cl.ContextLength)
	case errors.Is(err, llm.ErrModelNotFound):
		return &Error{Status: http.StatusNotFound, Type: TypeNotFound, Message: "model: " + err.Error()}
	case errors.Is(err, core.ErrAdminRequired):
		return &Error{Status: http.StatusForbidden, Type: TypePermission, Message: err.Error()}
	case errors.Is(err, llm.ErrInvalidInput), errors.Is(err, llm.ErrContextLength):
		return &Error{Status: http.StatusBadRequest, Type: TypeInvalidRequest, Message: err.Error()}
	case errors.Is(err, llm.ErrOverloaded):
		// The model's lanes and queue are full: server capacity, not the client's quota, which
		// Anthropic answers with 529 overloaded_error (rate_limit_error is a per-client limit).
		return &Error{Status: StatusOverloaded, Type: TypeOverloaded, Message: err.Error(), RetryAfter: llm.RetryAfterSeconds(err)}
	case errors.Is(err, context.Canceled):
		return &Error{Status: 499, Type: TypeInvalidRequest, Message: "the client closed the request"}
	default:
		return &Error{Status: http.StatusInternalServerError, Type: TypeAPI, Message: err.Error()}
	}
}

func (e *Error) wire(requestID string) body {
	return body{Type: "error", Error: wireError{Type: e.Type, Message: e.Message}, RequestID: requestID}
}

// Handler is a route that returns its error instead of writing it.
type Handler func(c *gin.Context) error

// Handle adapts h to gin: it gives the request a request-id header and renders a returned
// error in Anthropic's shape (unless the handler already began its response, in which case it
// reported the error itself).
func Handle(h Handler) gin.HandlerFunc {
	return func(c *gin.Context) {
		requestID(c)
		if err := h(c); err != nil && !c.Writer.Written() {
			WriteError(c, err)
		}
	}
}

// requestID returns the request's id, creating it and setting the request-id header once.
func requestID(c *gin.Context) string {
	if id := c.GetString(requestIDKey); id != "" {
		return id
	}
	id := newID("req_")
	c.Set(requestIDKey, id)
	c.Header(RequestIDHeader, id)
	return id
}

// WriteError renders err as an Anthropic error response.
func WriteError(c *gin.Context, err error) {
	e := toError(err)
	if e.RetryAfter > 0 {
		c.Header("retry-after", strconv.Itoa(e.RetryAfter))
	}
	c.JSON(e.Status, e.wire(requestID(c)))
}

func newID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}
