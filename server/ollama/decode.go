package ollama

import (
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
	if err := reqbody.Decode(r, v); err != nil {
		return decodeError(err)
	}
	return nil
}

func tooLarge() *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge,
		Message: fmt.Sprintf("the request body is larger than %d MiB; send a smaller request", MaxBodyBytes>>20)}
}

// decodeError words a body that could not be read or decoded (reqbody classifies it) as
// Ollama does.
func decodeError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	p := reqbody.Classify(err)
	switch p.Kind {
	case reqbody.TooLarge:
		return tooLarge()
	case reqbody.Empty:
		return badRequest("missing request body; send a JSON object") // Ollama's wording
	case reqbody.Unreadable:
		return badRequest("%v", err)
	case reqbody.NotObject:
		return badRequest("the request body must be a JSON object")
	case reqbody.WrongType:
		return badRequest("invalid type for %q: expected %s, got %s", p.Field, friendlyType(p.GoType), p.Value)
	case reqbody.Malformed, reqbody.TooDeep:
		return badRequest("malformed JSON in the request body at byte %d: %v", p.Offset, err)
	default:
		return badRequest("malformed JSON in the request body: %v", err)
	}
}

// friendlyType says what JSON value the Go type goType wants; a type without such words
// (a struct) is named as Go names it.
func friendlyType(goType string) string {
	switch reqbody.ShapeOf(goType) {
	case reqbody.IntegerShape:
		return "an integer"
	case reqbody.NumberShape:
		return "a number"
	case reqbody.ArrayShape:
		return "an array"
	case reqbody.MapShape:
		return "an object"
	case reqbody.StringShape:
		return "a string"
	case reqbody.BoolShape:
		return "a boolean"
	default:
		return strings.TrimPrefix(goType, "*")
	}
}
