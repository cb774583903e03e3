package openai

import (
	"net/http"

	"github.com/superfluid/superfluid/server/dialect"
)

// Dialect is OpenAI's entry in the router's table. OpenAI's shape is the house default, so it
// owns every path: its own routes, llama-server's (/health, /props, /slots), the router's
// /v1/keys, /v1/usage and /metrics, and unknown ones. The router asks it last.
var Dialect = dialect.Dialect{Name: "openai", Owns: func(string) bool { return true }, WriteError: WriteError}

// fromRefusal is the OpenAI error of a router refusal; its type goes with its status, as
// OpenAI's own answers have them (a wrong key is a 401 invalid_request_error).
func fromRefusal(r *dialect.Refusal) *Error {
	kind := "invalid_request_error" // 400, 401, 404, 405, 409
	switch {
	case r.Status == http.StatusForbidden:
		kind = "permission_error"
	case r.Status == http.StatusTooManyRequests:
		kind = "rate_limit_error"
	case r.Status >= http.StatusInternalServerError:
		kind = "server_error"
	}
	return &Error{Status: r.Status, Type: kind, Code: r.Code, Param: r.Param, Message: r.Message, RetryAfter: r.RetryAfter}
}
