package web

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/dialect"
	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/store"
)

// Error is a refusal of the web API: its status, code, the field at fault (Param) and a
// message; RetryAfter, when above 0, is sent as Retry-After (whole seconds, rounded up).
type Error struct {
	Status      int
	Code, Param string
	Message     string
	RetryAfter  time.Duration
}

func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error with a formatted message.
func Errorf(status int, code, param, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Param: param, Message: fmt.Sprintf(format, args...)}
}

// errorBody is the one error shape of the web API (OpenAI's).
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Code    *string `json:"code"`
	Param   *string `json:"param"`
}

// errorType is the error's type by status, as OpenAI names them.
func errorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusConflict:
		return "conflict_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// Dialect is the web API's entry in the router's table of error shapes (server/dialects.go):
// the web paths (Owns) and their renderer. The router consults it in team mode only.
var Dialect = dialect.Dialect{Name: "web", Owns: Owns, WriteError: WriteError}

// WriteError renders err as the web API's error reply and ends the request's chain. err is an
// *Error, a *dialect.Refusal (the router's own), an error of the services (mapped as the /v1
// routes map them), or anything else: a 500 whose details go to the log under an id.
func WriteError(c *gin.Context, err error) {
	e := asError(err)
	if e.Status >= 500 && e.Code == "" {
		id := errorID()
		slog.Error("web API error", "id", id, "method", c.Request.Method, "path", c.Request.URL.Path, "err", err)
		e = &Error{Status: e.Status, Code: "internal_error",
			Message: "internal error (id " + id + "; the server's log has the details under that id)"}
	}
	if e.RetryAfter > 0 {
		c.Header("Retry-After", strconv.Itoa(int((e.RetryAfter+time.Second-1)/time.Second)))
	}
	d := errorDetail{Message: e.Message, Type: errorType(e.Status)}
	if e.Code != "" {
		d.Code = &e.Code
	}
	if e.Param != "" {
		d.Param = &e.Param
	}
	c.AbortWithStatusJSON(e.Status, errorBody{Error: d})
}

// asError maps any error to an *Error; unknown errors become a bare 500 (WriteError hides them).
func asError(err error) *Error {
	var (
		we *Error
		rf *dialect.Refusal
		se *llm.StatusError
	)
	switch {
	case errors.As(err, &we):
		return we
	case errors.As(err, &rf):
		return &Error{Status: rf.Status, Code: rf.Code, Param: rf.Param, Message: rf.Message, RetryAfter: time.Duration(rf.RetryAfter) * time.Second}
	case errors.As(err, &se):
		return &Error{Status: se.Status, Code: se.Code, Message: se.Message, RetryAfter: se.RetryAfter}
	}
	if e := serviceError(err); e != nil {
		return e
	}
	return &Error{Status: http.StatusInternalServerError, Message: err.Error()}
}

// serviceError maps the services' sentinel errors to the codes the /v1 routes give them
// (server/people_routes.go, keys.go, lanes_routes.go); nil for an error it does not know.
func serviceError(err error) *Error {
	refuse := func(status int, code, param string) *Error {
		return &Error{Status: status, Code: code, Param: param, Message: err.Error()}
	}
	switch {
	case errors.Is(err, people.ErrInvalid):
		return refuse(http.StatusBadRequest, "invalid_value", "")
	case errors.Is(err, people.ErrNameTaken):
		return refuse(http.StatusConflict, "user_exists", "name")
	case errors.Is(err, people.ErrNotFound):
		return refuse(http.StatusNotFound, "user_not_found", "")
	case errors.Is(err, people.ErrLastAdmin):
		return refuse(http.StatusConflict, "last_admin", "")
	case errors.Is(err, auth.ErrInvalidKey):
		return refuse(http.StatusBadRequest, "invalid_value", "")
	case errors.Is(err, auth.ErrKeyExists):
		return refuse(http.StatusConflict, "key_exists", "name")
	case errors.Is(err, auth.ErrKeyNotFound):
		return refuse(http.StatusNotFound, "key_not_found", "")
	case errors.Is(err, auth.ErrConfiguredKey):
		return refuse(http.StatusConflict, "key_configured", "")
	case errors.Is(err, lanes.ErrLaneExists):
		return refuse(http.StatusConflict, "lane_exists", "name")
	case errors.Is(err, lanes.ErrLaneNotFound):
		return refuse(http.StatusNotFound, "lane_not_found", "")
	case errors.Is(err, lanes.ErrUnknownDevice):
		return refuse(http.StatusBadRequest, "unknown_device", "device")
	case errors.Is(err, lanes.ErrUnknownEngine):
		return refuse(http.StatusBadRequest, "unknown_engine", "engine")
	case errors.Is(err, lanes.ErrUnknownModel):
		return refuse(http.StatusBadRequest, "model_not_found", "model")
	case errors.Is(err, lanes.ErrInvalidLane):
		return refuse(http.StatusBadRequest, "invalid_value", "")
	case errors.Is(err, llm.ErrInvalidInput):
		return refuse(http.StatusBadRequest, "invalid_value", "")
	case errors.Is(err, llm.ErrModelNotFound):
		return refuse(http.StatusNotFound, "model_not_found", "model")
	case errors.Is(err, store.ErrNotFound):
		return refuse(http.StatusNotFound, "not_found", "")
	}
	return nil
}

func errorID() string {
	return "web-" + randomHex(6)
}
