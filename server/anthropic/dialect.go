package anthropic

import (
	"net/http"
	"strings"

	"github.com/superfluid/superfluid/server/dialect"
)

// Dialect is Anthropic's entry in the router's table: it owns /v1/messages and the paths
// under it. (/v1/models is OpenAI's path; Anthropic clients get their shape there through
// the openai package's hooks, by header.)
var Dialect = dialect.Dialect{Name: "anthropic", Owns: owns, WriteError: WriteError}

func owns(path string) bool {
	return path == "/v1/messages" || strings.HasPrefix(path, "/v1/messages/")
}

// fromRefusal is the Anthropic error of a router refusal; its type goes with its status.
func fromRefusal(r *dialect.Refusal) *Error {
	var kind string
	switch {
	case r.Status == http.StatusBadRequest:
		kind = TypeInvalidRequest
	case r.Status == http.StatusUnauthorized:
		kind = TypeAuthentication
	case r.Status == http.StatusForbidden:
		kind = TypePermission
	case r.Status == http.StatusTooManyRequests:
		kind = TypeRateLimit
	case r.Status >= http.StatusInternalServerError:
		kind = TypeAPI
	default:
		kind = TypeNotFound // 404, and 405: a route this server does not serve
	}
	return &Error{Status: r.Status, Type: kind, Message: r.Message, RetryAfter: r.RetryAfter}
}
