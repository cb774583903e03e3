package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxJSONBody is the largest JSON body a route reads (413 above it).
const MaxJSONBody = 1 << 20

// decodeBody reads r's JSON body, validates it against s and decodes it into v. Every problem
// is a 400 invalid_body naming the field (param), or a 413 over MaxJSONBody.
func decodeBody(r *http.Request, s *Schema, v any) error {
	if r.ContentLength > MaxJSONBody {
		return tooLarge()
	}
	data, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, MaxJSONBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return tooLarge()
		}
		return Errorf(http.StatusBadRequest, "invalid_body", "", "could not read the request body: %v", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return Errorf(http.StatusBadRequest, "invalid_body", "", "the request body is empty; send a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return Errorf(http.StatusBadRequest, "invalid_body", "", "the request body is not JSON: %v", err)
	}
	if dec.More() {
		return Errorf(http.StatusBadRequest, "invalid_body", "", "the request body holds more than one JSON value")
	}
	if err := validate(doc, s, ""); err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		// The schema admitted it, so this is a value Go cannot hold (a number past int64).
		param := ""
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			param = ute.Field
		}
		return Errorf(http.StatusBadRequest, "invalid_body", param, "the request body does not fit: %v", err)
	}
	return nil
}

func tooLarge() error {
	return Errorf(http.StatusRequestEntityTooLarge, "body_too_large", "", "the request body is larger than %d KiB", MaxJSONBody>>10)
}

// validate checks v (decoded with UseNumber) against s; path names v ("" the body itself).
func validate(v any, s *Schema, path string) *Error {
	bad := func(format string, args ...any) *Error {
		field := path
		if field == "" {
			field = "the body"
		}
		return &Error{Status: http.StatusBadRequest, Code: "invalid_body", Param: path, Message: field + ": " + fmt.Sprintf(format, args...)}
	}
	if v == nil {
		if s.nullable || s.Type == nil {
			return nil
		}
		return bad("must not be null; want %s", s.describe())
	}
	if len(s.Enum) > 0 && !inEnum(v, s.Enum) {
		return bad("must be one of %s", enumList(s.Enum))
	}
	switch typeName(s) {
	case "":
		return nil
	case "string":
		str, ok := v.(string)
		if !ok {
			return bad("want a string")
		}
		n := utf8.RuneCountInString(str)
		if s.MinLength != nil && n < *s.MinLength {
			if *s.MinLength == 1 {
				return bad("must not be empty")
			}
			return bad("must be at least %d characters", *s.MinLength)
		}
		if s.MaxLength != nil && n > *s.MaxLength {
			return bad("must be at most %d characters", *s.MaxLength)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return bad("want true or false")
		}
	case "integer", "number":
		num, ok := v.(json.Number)
		if !ok {
			return bad("want a number")
		}
		f, err := strconv.ParseFloat(string(num), 64)
		if err != nil || math.IsInf(f, 0) {
			return bad("want a number")
		}
		if typeName(s) == "integer" && f != math.Trunc(f) {
			return bad("want a whole number")
		}
		if s.Minimum != nil && f < *s.Minimum {
			return bad("must be at least %v", *s.Minimum)
		}
		if s.Maximum != nil && f > *s.Maximum {
			return bad("must be at most %v", *s.Maximum)
		}
	case "array":
		arr, ok := v.([]any)
		if !ok {
			return bad("want an array")
		}
		if s.MaxItems != nil && len(arr) > *s.MaxItems {
			return bad("must have at most %d items", *s.MaxItems)
		}
		for i, e := range arr {
			if err := validate(e, s.Items, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case "object":
		obj, ok := v.(map[string]any)
		if !ok {
			return bad("want a JSON object")
		}
		for _, name := range s.Required {
			if fv, ok := obj[name]; !ok || fv == nil {
				return &Error{Status: http.StatusBadRequest, Code: "invalid_body", Param: join(path, name),
					Message: join(path, name) + ": required"}
			}
		}
		for _, name := range s.order {
			if fv, ok := obj[name]; ok {
				if err := validate(fv, s.Properties[name], join(path, name)); err != nil {
					return err
				}
			}
		}
		if s.AdditionalProperties != nil {
			keys := make([]string, 0, len(obj))
			for k := range obj {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				if err := validate(obj[k], s.AdditionalProperties, join(path, k)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func inEnum(v any, enum []any) bool {
	for _, e := range enum {
		switch e := e.(type) {
		case nil:
			if v == nil {
				return true
			}
		case string:
			if s, ok := v.(string); ok && s == e {
				return true
			}
		case float64:
			if n, ok := v.(json.Number); ok {
				if f, err := n.Float64(); err == nil && f == e {
					return true
				}
			}
		}
	}
	return false
}

func enumList(enum []any) string {
	parts := make([]string, 0, len(enum))
	for _, e := range enum {
		b, _ := json.Marshal(e)
		parts = append(parts, string(b))
	}
	return strings.Join(parts, ", ")
}

// describe names the schema's type for a message.
func (s *Schema) describe() string {
	switch typeName(s) {
	case "object":
		return "a JSON object"
	case "array":
		return "an array"
	case "":
		return "a value"
	}
	return "a " + typeName(s)
}
