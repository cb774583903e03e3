package web_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
)

// openAPIDoc is the document the server serves, decoded loosely for the tables below.
type openAPIDoc struct {
	Paths map[string]map[string]struct {
		RequestBody *struct {
			Content map[string]struct {
				Schema json.RawMessage `json:"schema"`
			} `json:"content"`
		} `json:"requestBody"`
	} `json:"paths"`
}

// docOp is one operation of the document.
type docOp struct {
	method, path string
	body         map[string]any // the JSON request body's schema; nil for none
}

func fetchDoc(t *testing.T, tt *testTeam) ([]byte, []docOp) {
	t.Helper()
	r := send(t, "GET", tt.URL+"/api/openapi.json", "", http.Header{})
	if r.status != 200 {
		t.Fatalf("GET /api/openapi.json: %d %s", r.status, r.body)
	}
	var doc openAPIDoc
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	var ops []docOp
	for path, item := range doc.Paths {
		for method, op := range item {
			o := docOp{method: strings.ToUpper(method), path: path}
			if op.RequestBody != nil {
				if c, ok := op.RequestBody.Content["application/json"]; ok {
					if err := json.Unmarshal(c.Schema, &o.body); err != nil {
						t.Fatal(err)
					}
				}
			}
			ops = append(ops, o)
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].path+ops[i].method < ops[j].path+ops[j].method })
	return r.body, ops
}

// TestOpenAPIDocument: the served document is valid OpenAPI 3.1 by a maintained validator
// (pb33f/libopenapi-validator, against the specification's own schema) and lists every
// registered route but the hidden ones.
func TestOpenAPIDocument(t *testing.T) {
	tt := newTestTeam(t)
	raw, ops := fetchDoc(t, tt)
	doc, err := libopenapi.NewDocument(raw)
	if err != nil {
		t.Fatal(err)
	}
	if v := doc.GetVersion(); v != "3.1.0" {
		t.Fatalf("version %q", v)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("invalid document: %s (%s)", e.Message, e.Reason)
			for _, se := range e.SchemaValidationErrors {
				t.Errorf("  at %s: %s", se.FieldPath+" "+se.KeywordLocation, se.Reason)
			}
		}
	}
	var documented []string
	for _, o := range ops {
		documented = append(documented, o.method+" "+strings.NewReplacer("{", ":", "}", "").Replace(o.path))
	}
	for _, p := range tt.API.Paths() {
		if !slices.Contains(documented, p) && !strings.Contains(p, "/api/docs/*") && !strings.HasPrefix(strings.Fields(p)[1], "/ui") {
			t.Errorf("route %s is not in the document", p)
		}
	}
	for _, want := range []string{"POST /api/auth/login", "GET /api/auth/me", "GET /api/keys", "POST /api/bookings", "GET /api/lanes", "GET /api/usage"} {
		if !slices.Contains(documented, want) {
			t.Errorf("the document lacks %s", want)
		}
	}
}

// TestEveryDocumentedRouteAnswered walks the document itself (so routes other parts add are
// covered as they come): every operation, sent by an admin key with path parameters that name
// nothing, is answered by its handler, not by the router's unknown route or method (a 404 of
// the handler carries a code; the router's own has none).
func TestEveryDocumentedRouteAnswered(t *testing.T) {
	tt := newTestTeam(t)
	raw, ops := fetchDoc(t, tt)
	doc, err := libopenapi.NewDocument(raw)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := validator.NewValidator(doc)
	for _, o := range ops {
		path := o.path
		for strings.Contains(path, "{") {
			i, j := strings.Index(path, "{"), strings.Index(path, "}")
			path = path[:i] + "nothing-here" + path[j+1:]
		}
		body := ""
		if o.body != nil {
			body = "{}"
		}
		req, _ := http.NewRequest(o.method, tt.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tt.RootKey)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(res.Body)
		res.Body.Close()
		r := reply{status: res.StatusCode, body: data}
		_ = json.Unmarshal(data, &r.obj)
		if res.StatusCode == http.StatusMethodNotAllowed || (res.StatusCode == http.StatusNotFound && r.code() == "") {
			t.Errorf("%s %s: not routed: %d %s", o.method, path, res.StatusCode, data)
			continue
		}
		// What a route answers matches what the document says of it.
		if res.StatusCode < 300 && strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
			res.Body = io.NopCloser(bytes.NewReader(data))
			if ok, verrs := v.ValidateHttpResponse(req, res); !ok {
				for _, e := range verrs {
					t.Errorf("%s %s: the reply does not match the document: %s (%s) %s", o.method, path, e.Message, e.Reason, data)
					for _, se := range e.SchemaValidationErrors {
						t.Errorf("  at %s: %s", se.FieldPath+" "+se.KeywordLocation, se.Reason)
					}
				}
			}
		}
	}
}
