package ollama

import (
	"strings"

	"github.com/superfluid/superfluid/server/dialect"
)

// Dialect is Ollama's entry in the router's table: it owns "/" and everything under "/api".
var Dialect = dialect.Dialect{Name: "ollama", Owns: owns, WriteError: WriteError}

func owns(path string) bool {
	return path == "/" || path == "/api" || strings.HasPrefix(path, "/api/")
}

// fromRefusal is the Ollama error of a router refusal: Ollama's shape has only a message.
func fromRefusal(r *dialect.Refusal) *Error {
	return &Error{Status: r.Status, Message: r.Message, RetryAfter: r.RetryAfter}
}
