package app

import (
	"testing"
)

// TestTeamCacheIsolation: in team mode two people sending the same prompt to one lane over the
// real worker do not share its prefix cache: the second person sees cached_tokens 0, while the
// first person's repeat is served from the cache.
func TestTeamCacheIsolation(t *testing.T) {
	cfg := testConfig(t, testModel)
	cfg.Team = true
	keys := teamPeople(t, cfg, "root", "alice", "bob")
	a, srv := startServer(t, cfg, false)
	model := a.preload.ID
	do := teamCaller(t, srv.URL, keys)
	serveMainLane(t, do, model)
	const prompt = "Once upon a time there was a little girl who lived in a village near the forest and loved to play"
	cached := func(who string) float64 {
		t.Helper()
		code, v, body := do(who, "POST", "/v1/chat/completions", `{"model": "`+model+`", "max_tokens": 2, "messages": [{"role": "user", "content": "`+prompt+`"}]}`)
		if code != 200 {
			t.Fatalf("%s: %d %s", who, code, body)
		}
		usage, _ := v["usage"].(map[string]any)
		details, _ := usage["prompt_tokens_details"].(map[string]any)
		n, _ := details["cached_tokens"].(float64)
		return n
	}
	cached("alice")
	if n := cached("alice"); n == 0 {
		t.Fatalf("alice's repeat: cached_tokens 0; the cache should serve her own prompt")
	}
	if n := cached("bob"); n != 0 {
		t.Errorf("bob sent alice's prompt: cached_tokens %v, want 0 (another person's cache)", n)
	}
}
