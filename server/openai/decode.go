package openai

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

// decode reads the JSON body into v, turning every failure into an OpenAI error that names
// the offending parameter.
func decode(r *http.Request, v any) error {
	data, err := reqbody.Read(r)
	switch {
	case errors.Is(err, reqbody.ErrTooLarge):
		return tooLarge()
	case err != nil:
		return invalid("", err.Error())
	}
	if err := json.Unmarshal(data, v); err != nil {
		return decodeError(err)
	}
	return nil
}

func tooLarge() *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: "payload_too_large",
		Message: fmt.Sprintf("the request body is larger than %d MiB", MaxBodyBytes>>20)}
}

func decodeError(err error) *Error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &typeErr):
		// Fields of embedded structs come with the Go type's name in front; clients know only the JSON path.
		param := strings.ReplaceAll(typeErr.Field, "samplingParams.", "")
		if param == "" {
			return invalid("", "the request body must be a JSON object")
		}
		return invalid(param, fmt.Sprintf("invalid type for '%s': expected %s, got %s", param, friendlyType(typeErr.Type.String()), typeErr.Value))
	case errors.As(err, &syntaxErr):
		return invalid("", fmt.Sprintf("malformed JSON in the request body at byte %d: %v", syntaxErr.Offset, err))
	default:
		return invalid("", "malformed JSON in the request body: "+err.Error())
	}
}

func friendlyType(t string) string {
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "*int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"), strings.HasPrefix(t, "*float"):
		return "a number"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	case t == "string" || t == "*string":
		return "a string"
	case t == "bool" || t == "*bool":
		return "a boolean"
	default:
		return t
	}
}
