package web

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Schema is a JSON Schema (2020-12, the dialect of OpenAPI 3.1) generated from a Go type: the
// OpenAPI document shows it and decodeBody validates bodies against it.
type Schema struct {
	Type                 any                `json:"type,omitempty"` // a name, or [name, "null"]
	Format               string             `json:"format,omitempty"`
	Description          string             `json:"description,omitempty"`
	Properties           map[string]*Schema `json:"properties,omitempty"`
	Required             []string           `json:"required,omitempty"`
	Items                *Schema            `json:"items,omitempty"`
	AdditionalProperties *Schema            `json:"additionalProperties,omitempty"`
	Enum                 []any              `json:"enum,omitempty"`
	Minimum              *float64           `json:"minimum,omitempty"`
	Maximum              *float64           `json:"maximum,omitempty"`
	MinLength            *int               `json:"minLength,omitempty"`
	MaxLength            *int               `json:"maxLength,omitempty"`
	MaxItems             *int               `json:"maxItems,omitempty"`

	// order is the properties in declaration order (validation reports the first bad one).
	order []string
	// nullable: null is a valid value (a pointer, a slice, a map).
	nullable bool
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// schemaOf is the schema of values of t.
func schemaOf(t reflect.Type) *Schema { return schemaWalk(t, map[reflect.Type]bool{}) }

func schemaWalk(t reflect.Type, seen map[reflect.Type]bool) *Schema {
	switch t {
	case timeType:
		return &Schema{Type: "string", Format: "date-time"}
	case rawType:
		return &Schema{} // any JSON value
	}
	switch t.Kind() {
	case reflect.Pointer:
		s := schemaWalk(t.Elem(), seen)
		return nullable(s)
	case reflect.String:
		return &Schema{Type: "string"}
	case reflect.Bool:
		return &Schema{Type: "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		s := &Schema{Type: "integer"}
		if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64 {
			zero := 0.0
			s.Minimum = &zero
		}
		return s
	case reflect.Float32, reflect.Float64:
		return &Schema{Type: "number"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return &Schema{Type: "string", Format: "byte"}
		}
		return nullable(&Schema{Type: "array", Items: schemaWalk(t.Elem(), seen)})
	case reflect.Map:
		return nullable(&Schema{Type: "object", AdditionalProperties: schemaWalk(t.Elem(), seen)})
	case reflect.Struct:
		if seen[t] {
			return &Schema{Type: "object"} // a recursive type: its inner levels are not described
		}
		seen[t] = true
		defer delete(seen, t)
		s := &Schema{Type: "object", Properties: map[string]*Schema{}}
		addFields(s, t, seen)
		return s
	}
	return &Schema{} // an interface: any value
}

// addFields adds t's exported fields to s, embedded structs' fields inline (as encoding/json).
func addFields(s *Schema, t reflect.Type, seen map[reflect.Type]bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				addFields(s, ft, seen)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fs := schemaWalk(f.Type, seen)
		applyTags(fs, f.Tag)
		s.Properties[name] = fs
		s.order = append(s.order, name)
		if f.Tag.Get("required") == "true" {
			s.Required = append(s.Required, name)
		}
	}
}

// applyTags reads the schema tags of the package doc into s.
func applyTags(s *Schema, tag reflect.StructTag) {
	base := s
	if typeName(s) == "array" && s.Items != nil {
		base = s.Items // enum on a []string: each element is one of them
	}
	if v := tag.Get("doc"); v != "" {
		s.Description = v
	}
	if v := tag.Get("format"); v != "" {
		s.Format = v
	}
	if v := tag.Get("enum"); v != "" {
		for _, e := range strings.Split(v, ",") {
			if typeName(base) == "integer" || typeName(base) == "number" {
				if n, err := strconv.ParseFloat(e, 64); err == nil {
					base.Enum = append(base.Enum, n)
					continue
				}
			}
			base.Enum = append(base.Enum, e)
		}
		if base.nullable {
			base.Enum = append(base.Enum, nil)
		}
	}
	num := func(name string) *float64 {
		if n, err := strconv.ParseFloat(tag.Get(name), 64); err == nil {
			return &n
		}
		return nil
	}
	count := func(name string) *int {
		if n, err := strconv.Atoi(tag.Get(name)); err == nil {
			return &n
		}
		return nil
	}
	if n := num("minimum"); n != nil {
		s.Minimum = n
	}
	if n := num("maximum"); n != nil {
		s.Maximum = n
	}
	if n := count("minLength"); n != nil {
		s.MinLength = n
	}
	if n := count("maxLength"); n != nil {
		s.MaxLength = n
	}
	if n := count("maxItems"); n != nil {
		s.MaxItems = n
	}
}

func nullable(s *Schema) *Schema {
	if name, ok := s.Type.(string); ok {
		s.Type = []string{name, "null"}
	}
	s.nullable = true
	return s
}

// typeName is s's type without "null".
func typeName(s *Schema) string {
	switch t := s.Type.(type) {
	case string:
		return t
	case []string:
		return t[0]
	}
	return ""
}
