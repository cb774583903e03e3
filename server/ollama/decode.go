package ollama

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// MaxBodyBytes is the request body limit (the spec's 100 MiB).
const MaxBodyBytes = 100 << 20

// decode reads the JSON body into v, turning every failure into a 400 (413 for a body over
// the limit) that says what was wrong.
func decode(r *http.Request, v any) error {
	if r.ContentLength > MaxBodyBytes {
		return tooLarge()
	}
	data, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return tooLarge()
		}
		return badRequest("could not read the request body: %v", err)
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return badRequest("missing request body; send a JSON object")
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
