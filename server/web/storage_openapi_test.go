package web_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// The storage and catalog routes are in the generated OpenAPI document, and no reply schema
// has a place for the secret.
func TestStorageAndCatalogDocumented(t *testing.T) {
	tt := newTestTeam(t)
	r := tt.withKey(t, tt.BobKey, "GET", "/api/openapi.json", "")
	if r.status != 200 {
		t.Fatalf("openapi.json: %d %s", r.status, r.body)
	}
	paths, _ := r.obj["paths"].(map[string]any)
	for path, methods := range map[string][]string{
		"/api/storage":                  {"get"},
		"/api/admin/storage":            {"get", "post"},
		"/api/admin/storage/{id}":       {"put", "delete"},
		"/api/admin/storage/{id}/check": {"post"},
		"/api/admin/storage/{id}/usage": {"get"},
		"/api/catalog":                  {"get"},
		"/api/catalog/pulls":            {"get", "post"},
		"/api/catalog/pulls/{id}":       {"get"},
	} {
		ops, ok := paths[path].(map[string]any)
		if !ok {
			t.Errorf("the document has no %s", path)
			continue
		}
		for _, m := range methods {
			if _, ok := ops[m]; !ok {
				t.Errorf("the document has no %s %s", strings.ToUpper(m), path)
			}
		}
	}
	// No reply schema of a storage route has a place for the secret; each storage in them says
	// has_password instead.
	for path, ops := range paths {
		if !strings.Contains(path, "storage") {
			continue
		}
		for method, op := range ops.(map[string]any) {
			responses, _ := op.(map[string]any)["responses"].(map[string]any)
			raw, _ := json.Marshal(responses)
			if strings.Contains(string(raw), `"password":`) {
				t.Errorf("%s %s: a reply schema has a password property: %s", method, path, raw)
			}
			if (method == "get" && !strings.HasSuffix(path, "usage")) || method == "post" && !strings.HasSuffix(path, "check") || method == "put" {
				if !strings.Contains(string(raw), `"has_password":`) {
					t.Errorf("%s %s: the reply schema has no has_password: %s", method, path, raw)
				}
			}
		}
	}
}
