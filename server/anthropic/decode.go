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
	if err := reqbody.Decode(r, v); err != nil {
		return decodeError(err)
	}
	return nil
}

func tooLarge() *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge, Type: TypeRequestTooLarge,
		Message: fmt.Sprintf("Request exceeds the maximum allowed number of bytes: the body limit is %d MiB", MaxBodyBytes>>20)}
}

// decodeError words a body (or a part of one) that could not be read or decoded (reqbody
// classifies it) as Anthropic does.
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
		return invalid("%v", err)
	case reqbody.NotObject:
		return invalid("the request body must be a JSON object")
	case reqbody.WrongType:
		// Fields of the embedded conversation are top-level fields on the wire.
		field := strings.TrimPrefix(p.Field, "conversation.")
		return invalid("%s: Input should be %s", field, friendlyType(p.GoType))
	case reqbody.TooDeep:
		return invalid("the request body nests JSON deeper than %d levels (at byte %d); flatten it: a tool's input_schema rarely needs more than a few levels", reqbody.MaxDepth, p.Offset)
	case reqbody.Malformed:
		return invalid("the request body is not valid JSON (at byte %d): %v", p.Offset, err)
	default:
		return invalid("the request body is not valid JSON: %v", err)
	}
}

// friendlyType says, in Anthropic's words, what JSON value the Go type goType wants.
func friendlyType(goType string) string {
	t := strings.TrimPrefix(goType, "*")
	switch reqbody.ShapeOf(t) {
	case reqbody.IntegerShape:
		return "a valid integer"
	case reqbody.NumberShape:
		return "a valid number"
	case reqbody.ArrayShape:
		return "a valid list"
	case reqbody.MapShape:
		return "a valid dictionary"
	case reqbody.StringShape:
		return "a valid string"
	case reqbody.BoolShape:
		return "a valid boolean"
	}
	if strings.HasPrefix(t, "anthropic.") {
		return "a valid dictionary"
	}
	return "a valid " + t
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
