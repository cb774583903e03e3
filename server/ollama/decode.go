package ollama

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/superfluid/superfluid/server/reqbody"
)

// MaxBodyBytes is the request body limit (the spec's 100 MiB).
const MaxBodyBytes = reqbody.MaxBytes

// decode reads the JSON body into v, turning every failure into a 400 (413 for a body over
// the limit) that says what was wrong.
func decode(r *http.Request, v any) error {
	data, err := reqbody.Read(r)
	switch {
	case errors.Is(err, reqbody.ErrTooLarge):
		return tooLarge()
	case errors.Is(err, reqbody.ErrEmpty):
		return badRequest("missing request body; send a JSON object") // Ollama's wording
	case err != nil:
		return badRequest("%v", err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return decodeError(err)
	}
	return nil
}

func tooLarge() *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge,
		Message: fmt.Sprintf("the request body is larger than %d MiB; send a smaller request", MaxBodyBytes>>20)}
}

func decodeError(err error) *Error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return badRequest("the request body must be a JSON object")
		}
		return badRequest("invalid type for %q: expected %s, got %s", typeErr.Field, friendlyType(typeErr.Type.String()), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return badRequest("malformed JSON in the request body at byte %d: %v", syntaxErr.Offset, err)
	default:
		return badRequest("malformed JSON in the request body: %v", err)
	}
}

func friendlyType(t string) string {
	t = strings.TrimPrefix(t, "*")
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	case strings.HasPrefix(t, "map["):
		return "an object"
	case t == "string":
		return "a string"
	case t == "bool":
		return "a boolean"
	default:
		return t
	}
}
