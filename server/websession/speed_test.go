package websession

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestRPCSpeedSettings: settings.set takes a model's speed settings and settings.get returns
// them under their wire names.
func TestRPCSpeedSettings(t *testing.T) {
	_, srv, _ := startFake(t, Config{})
	set := map[string]any{"speculative": "draft", "draft_model": "tiny-draft", "draft_tokens": 6, "flash_attention": "on"}
	if r := rpc(t, srv, "settings.set", map[string]any{"model": "tiny", "settings": set}); r.Error != nil {
		t.Fatalf("settings.set: %+v", r.Error)
	}
	r := rpc(t, srv, "settings.get", map[string]string{"model": "tiny"})
	got := string(r.Result.(json.RawMessage))
	for _, want := range []string{`"speculative":"draft"`, `"draft_model":"tiny-draft"`, `"draft_tokens":6`, `"flash_attention":"on"`} {
		if r.Error != nil || !strings.Contains(got, want) {
			t.Errorf("settings.get %s (%+v) lacks %s", got, r.Error, want)
		}
	}
}
