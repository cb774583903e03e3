package reqbody

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
)

// Kind is what went wrong with a request body, as every dialect tells it apart; each dialect
// words it its own way.
type Kind int

// The kinds of Problem.
const (
	// Other is an error none of the kinds below names: one a type's own UnmarshalJSON
	// returned (a dialect finds its own errors in Err), or encoding/json's about the target.
	Other Kind = iota
	// TooLarge is a body over MaxBytes (413).
	TooLarge
	// Empty is an empty or blank body.
	Empty
	// Unreadable is a body the transport failed to deliver (it stalled, the client hung up).
	Unreadable
	// NotObject is JSON of the wrong type at the top (an array where the request is an object).
	NotObject
	// WrongType is a field holding the wrong type of JSON value: Field, GoType and Value say
	// which.
	WrongType
	// TooDeep is JSON nested past encoding/json's limit; Offset is where it gave up.
	TooDeep
	// Malformed is text that is not JSON; Offset is the byte at fault.
	Malformed
)

// Problem is a request body that could not be read or decoded, classified.
type Problem struct {
	Kind Kind
	// Field is the JSON path of a WrongType field as encoding/json names it ("messages.content";
	// fields of embedded structs come with the Go type's name in front).
	Field string
	// GoType is the Go type the WrongType field decodes into ("int", "[]string"); Shape reads it.
	GoType string
	// Value is the JSON type the WrongType field was sent ("string", "number").
	Value string
	// Offset is the byte of the body at which a Malformed or TooDeep body goes wrong.
	Offset int64
	// Err is the error classified.
	Err error
}

func (p *Problem) Error() string { return p.Err.Error() }

func (p *Problem) Unwrap() error { return p.Err }

// Decode reads r's JSON body into v (see Read). Its error is a *Problem.
func Decode(r *http.Request, v any) error {
	data, err := Read(r)
	switch {
	case errors.Is(err, ErrTooLarge):
		return &Problem{Kind: TooLarge, Err: err}
	case errors.Is(err, ErrEmpty):
		return &Problem{Kind: Empty, Err: err}
	case err != nil:
		return &Problem{Kind: Unreadable, Err: err}
	}
	if err := json.Unmarshal(data, v); err != nil {
		return Classify(err)
	}
	return nil
}

// Classify is the Problem of err, an error of Decode or of json.Unmarshal.
func Classify(err error) *Problem {
	var p *Problem
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &p):
		return p
	case errors.As(err, &typeErr) && typeErr.Field == "":
		return &Problem{Kind: NotObject, Err: err}
	case errors.As(err, &typeErr):
		return &Problem{Kind: WrongType, Field: typeErr.Field, GoType: typeErr.Type.String(), Value: typeErr.Value, Err: err}
	case errors.As(err, &syntaxErr) && strings.Contains(syntaxErr.Error(), "exceeded max depth"):
		return &Problem{Kind: TooDeep, Offset: syntaxErr.Offset, Err: err}
	case errors.As(err, &syntaxErr):
		return &Problem{Kind: Malformed, Offset: syntaxErr.Offset, Err: err}
	default:
		return &Problem{Kind: Other, Err: err}
	}
}

// MaxDepth is how deep encoding/json decodes nested values before it gives up (TooDeep).
const MaxDepth = 10000

// Shape is the kind of JSON value a Go type decodes from, for messages that say what a field
// wants; each dialect has its words for them.
type Shape int

// The shapes ShapeOf tells apart.
const (
	// AnyShape is a type none of the others is (a struct, an interface): a dialect names it
	// by its Go name.
	AnyShape Shape = iota
	IntegerShape
	NumberShape
	ArrayShape
	MapShape
	StringShape
	BoolShape
)

// ShapeOf is the shape of the Go type named goType (a Problem's GoType); a pointer has the
// shape of what it points to.
func ShapeOf(goType string) Shape {
	t := strings.TrimPrefix(goType, "*")
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return IntegerShape
	case strings.HasPrefix(t, "float"):
		return NumberShape
	case strings.HasPrefix(t, "[]"):
		return ArrayShape
	case strings.HasPrefix(t, "map["):
		return MapShape
	case t == "string":
		return StringShape
	case t == "bool":
		return BoolShape
	}
	return AnyShape
}
