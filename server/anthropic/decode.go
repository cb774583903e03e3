package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/superfluid/superfluid/server/reqbody"
)

// MaxBodyBytes is the request body limit (the spec's 100 MiB).
const MaxBodyBytes = reqbody.MaxBytes

// decode reads the JSON body into v, turning every failure into an Anthropic error whose
// message starts with the field at fault, as Anthropic words them ("max_tokens: Input should
// be a valid integer").
func decode(r *http.Request, v any) error {
	data, err := reqbody.Read(r)
	switch {
	case errors.Is(err, reqbody.ErrTooLarge):
		return tooLarge()
	case err != nil:
		return invalid("%v", err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return decodeError(err)
	}
	return nil
}

// maxDepth is how deep encoding/json decodes nested values before it gives up.
const maxDepth = 10000

func tooLarge() *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge, Type: TypeRequestTooLarge,
		Message: fmt.Sprintf("Request exceeds the maximum allowed number of bytes: the body limit is %d MiB", MaxBodyBytes>>20)}
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
			return invalid("the request body must be a JSON object")
		}
		// Fields of the embedded conversation are top-level fields on the wire.
		field := strings.TrimPrefix(typeErr.Field, "conversation.")
		return invalid("%s: Input should be %s", field, friendlyType(typeErr.Type.String()))
	case errors.As(err, &syntaxErr) && strings.Contains(syntaxErr.Error(), "exceeded max depth"):
		return invalid("the request body nests JSON deeper than %d levels (at byte %d); flatten it: a tool's input_schema rarely needs more than a few levels", maxDepth, syntaxErr.Offset)
	case errors.As(err, &syntaxErr):
		return invalid("the request body is not valid JSON (at byte %d): %v", syntaxErr.Offset, err)
	default:
		return invalid("the request body is not valid JSON: %v", err)
	}
}

func friendlyType(t string) string {
	t = strings.TrimPrefix(t, "*")
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "a valid integer"
	case strings.HasPrefix(t, "float"):
		return "a valid number"
	case strings.HasPrefix(t, "[]"):
		return "a valid list"
	case strings.HasPrefix(t, "map["), strings.HasPrefix(t, "anthropic."):
		return "a valid dictionary"
	case t == "string":
		return "a valid string"
	case t == "bool":
		return "a valid boolean"
	default:
		return "a valid " + t
	}
}

// kind names the JSON type of a raw value for messages.
func kind(b json.RawMessage) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '{':
		return "an object"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}
