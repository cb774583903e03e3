package openai

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/superfluid/superfluid/server/reqbody"
)

// MaxBodyBytes is the request body limit (the spec's 100 MiB).
const MaxBodyBytes = reqbody.MaxBytes

// decode reads the JSON body into v, turning every failure into an OpenAI error that names
// the offending parameter.
func decode(r *http.Request, v any) error {
	if err := reqbody.Decode(r, v); err != nil {
		return decodeError(err)
	}
	return nil
}

func tooLarge() *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: "payload_too_large",
		Message: fmt.Sprintf("the request body is larger than %d MiB", MaxBodyBytes>>20)}
}

// decodeError words a body that could not be read or decoded (reqbody classifies it) as
// OpenAI does.
func decodeError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	p := reqbody.Classify(err)
	switch p.Kind {
	case reqbody.TooLarge:
		return tooLarge()
	case reqbody.Empty, reqbody.Unreadable:
		return invalid("", err.Error())
	case reqbody.NotObject:
		return invalid("", "the request body must be a JSON object")
	case reqbody.WrongType:
		// Fields of embedded structs come with the Go type's name in front; clients know only the JSON path.
		param := strings.ReplaceAll(p.Field, "samplingParams.", "")
		return invalid(param, fmt.Sprintf("invalid type for '%s': expected %s, got %s", param, friendlyType(p.GoType), p.Value))
	case reqbody.Malformed, reqbody.TooDeep:
		return invalid("", fmt.Sprintf("malformed JSON in the request body at byte %d: %v", p.Offset, err))
	default:
		return invalid("", "malformed JSON in the request body: "+err.Error())
	}
}

// friendlyType says what JSON value the Go type goType wants; a type without such words
// (a struct, a map) is named as Go names it.
func friendlyType(goType string) string {
	switch reqbody.ShapeOf(goType) {
	case reqbody.IntegerShape:
		return "an integer"
	case reqbody.NumberShape:
		return "a number"
	case reqbody.ArrayShape:
		return "an array"
	case reqbody.StringShape:
		return "a string"
	case reqbody.BoolShape:
		return "a boolean"
	default:
		return goType
	}
}
