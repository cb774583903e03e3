package openai_test

import (
	"encoding/json"
	"testing"
)

// TestSlotsRetiredRoutes: llama.cpp's slot save and restore answer 501 route_retired in every
// spelling, and /slots itself answers one aggregate entry.
func TestSlotsRetiredRoutes(t *testing.T) {
	f := setup(t, config{})
	for _, path := range []string{"/slots/0/save", "/slots/0/restore", "/slots/0?action=save", "/slots/1?action=restore"} {
		resp, b := f.do(t, "POST", path, `{"filename":"x.bin"}`)
		checkError(t, resp, b, wantError{501, "invalid_request_error", "", "route_retired", "retired"})
	}
	resp, b := f.do(t, "GET", "/slots", "")
	var entries []map[string]any
	if err := json.Unmarshal(b, &entries); err != nil || resp.StatusCode != 200 || len(entries) != 1 {
		t.Fatalf("/slots: %d %s (%v)", resp.StatusCode, b, err)
	}
	for _, key := range []string{"id", "n_ctx", "is_processing", "lanes", "queued", "inflight", "kv_cache", "tick", "totals"} {
		if _, ok := entries[0][key]; !ok {
			t.Errorf("/slots entry lacks %q: %s", key, b)
		}
	}
	resp, b = f.do(t, "GET", "/slots?model=nope", "")
	checkError(t, resp, b, wantError{404, "invalid_request_error", "model", "model_not_found", "nope"})
}
