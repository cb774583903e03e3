package web

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// lazyDoc is the OpenAPI document, built once from the registry at its first request.
type lazyDoc struct {
	once sync.Once
	json []byte
	err  error
}

// OpenAPI returns the OpenAPI 3.1 document of every registered route (but the hidden ones).
func (a *API) OpenAPI() ([]byte, error) {
	a.doc.once.Do(func() { a.doc.json, a.doc.err = json.MarshalIndent(a.document(), "", " ") })
	return a.doc.json, a.doc.err
}

type document struct {
	OpenAPI    string                           `json:"openapi"`
	Info       map[string]string                `json:"info"`
	Paths      map[string]map[string]*operation `json:"paths"`
	Components components                       `json:"components"`
}

type components struct {
	Schemas         map[string]*Schema        `json:"schemas"`
	SecuritySchemes map[string]securityScheme `json:"securitySchemes"`
}

type securityScheme struct {
	Type   string `json:"type"`
	In     string `json:"in,omitempty"`
	Name   string `json:"name,omitempty"`
	Scheme string `json:"scheme,omitempty"`
}

type operation struct {
	OperationID string                `json:"operationId"`
	Summary     string                `json:"summary,omitempty"`
	Tags        []string              `json:"tags,omitempty"`
	Parameters  []parameter           `json:"parameters,omitempty"`
	RequestBody *requestBody          `json:"requestBody,omitempty"`
	Responses   map[string]*response  `json:"responses"`
	Security    []map[string][]string `json:"security"`
}

type parameter struct {
	Name        string  `json:"name"`
	In          string  `json:"in"`
	Required    bool    `json:"required,omitempty"`
	Description string  `json:"description,omitempty"`
	Schema      *Schema `json:"schema"`
}

type requestBody struct {
	Required bool                 `json:"required"`
	Content  map[string]mediaType `json:"content"`
}

type response struct {
	Description string               `json:"description"`
	Content     map[string]mediaType `json:"content,omitempty"`
}

type mediaType struct {
	Schema any `json:"schema,omitempty"`
}

var errorRef = map[string]string{"$ref": "#/components/schemas/Error"}

func (a *API) document() document {
	doc := document{OpenAPI: "3.1.0",
		Info:  map[string]string{"title": "SlotServe web API", "version": "1", "description": "The browser API of superfluid serve --team: cookie sessions (sign in at POST /api/auth/login; writes need the X-CSRF-Token header) or an API key."},
		Paths: map[string]map[string]*operation{},
		Components: components{
			Schemas: map[string]*Schema{"Error": schemaOf(reflect.TypeFor[errorBody]())},
			SecuritySchemes: map[string]securityScheme{
				"session": {Type: "apiKey", In: "cookie", Name: CookieName},
				"csrf":    {Type: "apiKey", In: "header", Name: CSRFHeader},
				"bearer":  {Type: "http", Scheme: "bearer"},
			},
		},
	}
	for _, o := range a.ops {
		if o.meta.Hidden {
			continue
		}
		path, params := openAPIPath(o.path)
		item := doc.Paths[path]
		if item == nil {
			item = map[string]*operation{}
			doc.Paths[path] = item
		}
		op := &operation{OperationID: operationID(o.method, o.path), Summary: o.meta.Summary, Parameters: params,
			Responses: map[string]*response{"default": {Description: "an error", Content: map[string]mediaType{"application/json": {Schema: errorRef}}}}}
		if o.meta.Tag != "" {
			op.Tags = []string{o.meta.Tag}
		}
		op.Parameters = append(op.Parameters, queryParams(o.meta.Query)...)
		switch {
		case o.in != nil:
			op.RequestBody = &requestBody{Required: true, Content: map[string]mediaType{"application/json": {Schema: schemaOf(o.in)}}}
		case o.meta.Consumes != "":
			op.RequestBody = &requestBody{Required: true, Content: map[string]mediaType{o.meta.Consumes: {Schema: map[string]string{"type": "string", "format": "binary"}}}}
		}
		ok := &response{Description: http.StatusText(o.meta.Status)}
		switch {
		case o.out != nil:
			ok.Content = map[string]mediaType{"application/json": {Schema: schemaOf(o.out)}}
		case o.meta.Produces == "application/json":
			ok.Content = map[string]mediaType{o.meta.Produces: {Schema: map[string]string{"type": "object"}}}
		case o.meta.Produces != "":
			ok.Content = map[string]mediaType{o.meta.Produces: {Schema: map[string]string{"type": "string"}}}
		}
		op.Responses[itoa(o.meta.Status)] = ok
		op.Security = security(o.meta.Access, writes(o.method))
		item[strings.ToLower(o.method)] = op
	}
	return doc
}

// security is a route's requirement: a session (with the CSRF header on writes) or a key.
func security(access Access, write bool) []map[string][]string {
	if access == Public {
		return []map[string][]string{}
	}
	session := map[string][]string{"session": {}}
	if write {
		session["csrf"] = []string{}
	}
	return []map[string][]string{session, {"bearer": {}}}
}

// openAPIPath turns gin's ":id" into "{id}" and returns the path parameters.
func openAPIPath(path string) (string, []parameter) {
	parts := strings.Split(path, "/")
	var params []parameter
	for i, p := range parts {
		if strings.HasPrefix(p, ":") || strings.HasPrefix(p, "*") {
			name := p[1:]
			parts[i] = "{" + name + "}"
			params = append(params, parameter{Name: name, In: "path", Required: true, Schema: &Schema{Type: "string"}})
		}
	}
	return strings.Join(parts, "/"), params
}

// queryParams documents the `form:"x"` fields of q.
func queryParams(q any) []parameter {
	if q == nil {
		return nil
	}
	t := reflect.TypeOf(q)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []parameter
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("form"), ",")
		if name == "" || name == "-" {
			continue
		}
		s := schemaWalk(f.Type, map[reflect.Type]bool{})
		if ft := f.Type; ft.Kind() == reflect.Pointer {
			s = schemaWalk(ft.Elem(), map[reflect.Type]bool{})
		}
		applyTags(s, f.Tag)
		out = append(out, parameter{Name: name, In: "query", Required: f.Tag.Get("required") == "true", Description: s.Description, Schema: s})
	}
	return out
}

// operationID names an operation from its method and path: "get_api_admin_users_id".
func operationID(method, path string) string {
	id := strings.ToLower(method) + strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		}
		return '_'
	}, strings.NewReplacer(":", "", "*", "").Replace(path))
	return strings.TrimRight(id, "_")
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// Paths lists the registered routes as "METHOD path" (gin syntax), sorted: for tests.
func (a *API) Paths() []string {
	out := make([]string, 0, len(a.ops))
	for _, o := range a.ops {
		out = append(out, o.method+" "+o.path)
	}
	slices.Sort(out)
	return out
}
