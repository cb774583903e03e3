package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestScopedKeyAnthropicModelList: a key limited to m1 sees only m1 in Anthropic's shape of
// /v1/models too (anthropic-version), and m2 named in a page cursor or by id gets the answer
// a model that does not exist gets.
func TestScopedKeyAnthropicModelList(t *testing.T) {
	k := setupKeyed(t, "127.0.0.1")
	av := []string{"anthropic-version", "2023-06-01"}
	status, body := k.post(t, k.scoped, "GET /v1/models", "", av...)
	if status != http.StatusOK || strings.Contains(body, "m2") || !strings.Contains(body, `"id":"m1"`) || !strings.Contains(body, `"max_input_tokens"`) {
		t.Errorf("Anthropic list for a key limited to m1: %d %s", status, body)
	}
	for _, q := range []string{"GET /v1/models?after_id=%s", "GET /v1/models?before_id=%s", "GET /v1/models/%s"} {
		status, got := k.post(t, k.scoped, strings.Replace(q, "%s", "m2", 1), "", av...)
		wantStatus, want := k.post(t, k.scoped, strings.Replace(q, "%s", "nope-model", 1), "", av...)
		if status/100 != 4 || status != wantStatus || scrub(got, "m2") != scrub(want, "nope-model") {
			t.Errorf("%s: m2 %d %s\nunknown model: %d %s", q, status, got, wantStatus, want)
		}
	}
	// The admin key sees both.
	if status, body := k.post(t, k.admin, "GET /v1/models", "", av...); status != http.StatusOK || !strings.Contains(body, `"id":"m2"`) {
		t.Errorf("admin's Anthropic list: %d %s", status, body)
	}
}
