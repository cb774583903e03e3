package app

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTeamSharedPrefix: over the real worker in team mode, a system prompt an admin marked
// shared is the one exception to the cache partitioned by person. Before it is registered, and
// after it is removed, another person's identical chat sees cached_tokens 0; while it is, they
// reuse its tokens (cached_tokens > 0) but never the first person's private continuation (at
// most the shared text's tokens). A member cannot register one.
func TestTeamSharedPrefix(t *testing.T) {
	cfg := testConfig(t, testModel)
	cfg.Team = true
	keys := teamPeople(t, cfg, "root", "alice", "bob", "carol", "dave", "erin", "frank")
	a, srv := startServer(t, cfg, false)
	model := a.preload.ID
	do := teamCaller(t, srv.URL, keys)
	serveMainLane(t, do, model)
	const system = "Once upon a time there was a little girl named Lily who lived in a small house near the big forest with her mom and her dog"
	const question = "What did Lily find in the garden one sunny day"
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	usage := func(who, path, body string) (prompt, cached float64) {
		t.Helper()
		code, v, raw := do(who, "POST", path, body)
		if code != 200 {
			t.Fatalf("%s %s: %d %s", who, path, code, raw)
		}
		u, _ := v["usage"].(map[string]any)
		details, _ := u["prompt_tokens_details"].(map[string]any)
		prompt, _ = u["prompt_tokens"].(float64)
		cached, _ = details["cached_tokens"].(float64)
		return prompt, cached
	}
	chat := func(who string) (prompt, cached float64) {
		t.Helper()
		return usage(who, "/v1/chat/completions", `{"model": "`+model+`", "max_tokens": 2, "messages": [{"role": "system", "content": `+
			quote(system)+`}, {"role": "user", "content": `+quote(question)+`}]}`)
	}

	chat("alice")
	if _, n := chat("bob"); n != 0 {
		t.Fatalf("bob after alice, no shared prefix registered: cached_tokens %v, want 0", n)
	}
	if code, _, body := do("alice", "POST", "/v1/admin/shared-prefixes", `{"text": `+quote(system)+`}`); code != 403 || !strings.Contains(body, "admin_required") {
		t.Fatalf("a member registering a shared prefix: %d %s, want 403 admin_required", code, body)
	}
	code, v, body := do("root", "POST", "/v1/admin/shared-prefixes", `{"text": `+quote(system)+`, "name": "team"}`)
	if code != 201 {
		t.Fatalf("register the shared prefix: %d %s", code, body)
	}
	id, _ := v["id"].(string)
	prompt, shared := chat("carol")
	if shared == 0 {
		t.Fatalf("carol after alice and bob with the system prompt shared: cached_tokens 0, want the shared part")
	}
	if _, own := chat("carol"); own != prompt-1 || shared >= own {
		t.Errorf("carol's repeat: cached_tokens %v of %v, her first %v; want all but the last, more than the shared part", own, prompt, shared)
	}

	// A raw prompt: the shared text, then a private continuation erin sends first. dave's
	// identical prompt reuses at most the shared text's tokens.
	_, tv, tb := do("root", "POST", "/v1/tokenize", `{"model": "`+model+`", "input": `+quote(system)+`, "add_special": true}`)
	tokens, _ := tv["tokens"].([]any)
	if len(tokens) == 0 {
		t.Fatalf("tokenize the shared text: %s", tb)
	}
	private := system + " and one sunny day she found a big red ball under the old tree in the garden behind the house"
	complete := func(who string) (prompt, cached float64) {
		t.Helper()
		return usage(who, "/v1/completions", `{"model": "`+model+`", "max_tokens": 2, "prompt": `+quote(private)+`}`)
	}
	complete("erin")
	promptTokens, n := complete("dave")
	if n == 0 || n > float64(len(tokens)) {
		t.Errorf("dave after erin, the shared text (%d tokens) and erin's private continuation (%v tokens in all): cached_tokens %v, want 1..%d",
			len(tokens), promptTokens, n, len(tokens))
	}

	if code, _, body := do("root", "DELETE", "/v1/admin/shared-prefixes/"+id, ""); code != 200 {
		t.Fatalf("remove the shared prefix: %d %s", code, body)
	}
	if _, n := chat("frank"); n != 0 {
		t.Errorf("frank after the shared prefix was removed: cached_tokens %v, want 0", n)
	}
}
