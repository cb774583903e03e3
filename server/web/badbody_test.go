package web_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
)

// sample is a value valid for schema s: what each required field is given while another one
// is made wrong.
func sample(s map[string]any) any {
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		for _, e := range enum {
			if e != nil && e != "" {
				return e
			}
		}
		return enum[0]
	}
	switch typeOf(s) {
	case "string":
		n := 1
		if m, ok := s["minLength"].(float64); ok {
			n = int(m)
		}
		return strings.Repeat("x", max(n, 1))
	case "integer", "number":
		if m, ok := s["minimum"].(float64); ok {
			return m
		}
		return 0
	case "boolean":
		return false
	case "array":
		return []any{}
	case "object":
		obj := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		for _, r := range required(s) {
			obj[r] = sample(props[r].(map[string]any))
		}
		return obj
	}
	return "now" // a value of any type (a booking's start: a time)
}

func typeOf(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		return t[0].(string)
	}
	return ""
}

func required(s map[string]any) []string {
	var out []string
	list, _ := s["required"].([]any)
	for _, r := range list {
		out = append(out, r.(string))
	}
	return out
}

// wrongValues are values of a field's schema that the schema refuses: another type, past a
// bound, outside the enum.
func wrongValues(s map[string]any) map[string]any {
	out := map[string]any{}
	switch typeOf(s) {
	case "string":
		out["a number"] = 12
		if m, ok := s["maxLength"].(float64); ok {
			out["too long"] = strings.Repeat("y", int(m)+1)
		}
		if m, ok := s["minLength"].(float64); ok && m > 0 {
			out["too short"] = strings.Repeat("y", int(m)-1)
		}
	case "integer", "number":
		out["a string"] = "12"
		if m, ok := s["minimum"].(float64); ok {
			out["below the minimum"] = m - 1
		}
		if m, ok := s["maximum"].(float64); ok {
			out["above the maximum"] = m + 1
		}
	case "boolean":
		out["a string"] = "yes"
	case "array":
		out["an object"] = map[string]any{}
	case "object":
		out["an array"] = []any{}
	}
	if _, ok := s["enum"]; ok {
		out["outside the enum"] = "not-one-of-them"
	}
	return out
}

// TestInvalidBodies is table-driven from the served document, so every route with a JSON body
// (other parts' too) is covered: each required field left out, and each field given a value
// its schema refuses, is 400 invalid_body naming that field; a body that is not an object, or
// over 1 MiB, is refused too. The admin key sends them, so no route refuses them for access.
func TestInvalidBodies(t *testing.T) {
	tt := newTestTeam(t)
	_, ops := fetchDoc(t, tt)
	tried := 0
	for _, o := range ops {
		if o.body == nil {
			continue
		}
		path := o.path
		for strings.Contains(path, "{") {
			i, j := strings.Index(path, "{"), strings.Index(path, "}")
			path = path[:i] + "nothing-here" + path[j+1:]
		}
		name := o.method + " " + o.path
		base := sample(o.body).(map[string]any)
		props, _ := o.body["properties"].(map[string]any)
		send := func(what, want string, body any) {
			t.Helper()
			data, _ := json.Marshal(body)
			r := tt.withKey(t, tt.RootKey, o.method, path, string(data))
			if r.status != 400 || r.code() != "invalid_body" || r.param() != want {
				t.Errorf("%s, %s: %d %s (want 400 invalid_body, param %q)", name, what, r.status, r.body, want)
			}
			tried++
		}
		for _, field := range required(o.body) {
			body := clone(base)
			delete(body, field)
			send(field+" left out", field, body)
			body[field] = nil
			send(field+" null", field, body)
		}
		fields := make([]string, 0, len(props))
		for f := range props {
			fields = append(fields, f)
		}
		sort.Strings(fields)
		for _, field := range fields {
			for what, v := range wrongValues(props[field].(map[string]any)) {
				body := clone(base)
				body[field] = v
				send(fmt.Sprintf("%s %s", field, what), field, body)
			}
		}
		for what, body := range map[string]string{"an array": `[]`, "not JSON": `{"name": `, "empty": ``} {
			r := tt.withKey(t, tt.RootKey, o.method, path, body, "Content-Type", "application/json")
			if r.status != 400 || r.code() != "invalid_body" {
				t.Errorf("%s, %s: %d %s", name, what, r.status, r.body)
			}
		}
		big := `{"name": "` + strings.Repeat("a", 1<<20) + `"}`
		if r := tt.withKey(t, tt.RootKey, o.method, path, big); r.status != 413 || r.code() != "body_too_large" {
			t.Errorf("%s, over 1 MiB: %d %.200s", name, r.status, r.body)
		}
	}
	t.Logf("%d bad bodies tried", tried)
	if tried < 20 {
		t.Fatalf("only %d bad bodies tried: the table found too few routes with bodies", tried)
	}
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
