package web_test

import (
	"fmt"
	"sync"
	"testing"
)

// rev20a: Locked, Verify and Fail are three steps with nothing holding them together, so
// sign-ins sent at once all pass the lockout check before any failure is counted: the
// account's limit of 10 guesses within 15 minutes becomes as many as can be sent in parallel.
func TestRev20aLockoutHoldsUnderConcurrentGuesses(t *testing.T) {
	tt := newTestTeam(t)
	const n = 60
	var wg sync.WaitGroup
	statuses := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each from its own address: only the account's limit (10) applies.
			r := login(t, tt, "bob", fmt.Sprintf("wrong%d", i), fmt.Sprintf("10.1.%d.%d", i/250, i%250+1))
			statuses[i] = r.status
		}()
	}
	wg.Wait()
	tried := 0
	for _, s := range statuses {
		if s == 401 { // the password was checked
			tried++
		}
	}
	if tried > 10 {
		t.Errorf("%d of %d concurrent guesses for one account had their password checked; the lockout allows 10", tried, n)
	}
}

// rev20a: a key an admin scoped for a member (one model, 1 request a minute) mints, through
// POST /api/keys, an unscoped key of the same person: every limit the admin set is shed. Before
// the web API a member's key could not manage keys at all (/v1/keys is admin-only).
func TestRev20aScopedKeyCannotMintUnscopedKey(t *testing.T) {
	tt := newTestTeam(t)
	admin := tt.signIn(t, "root", "password0")
	res := admin.do("POST", "/api/admin/keys", `{"name": "bob-scoped", "user": "bob", "models": ["alpha"], "rpm": 1, "tpm": 10, "concurrency": 1}`)
	if res.status != 201 {
		t.Fatalf("admin creates bob's scoped key: %d %s", res.status, res.body)
	}
	scoped, _ := res.obj["key"].(string)
	res = tt.withKey(t, scoped, "POST", "/api/keys", `{"name": "free"}`)
	if res.status == 201 {
		t.Errorf("a scoped key minted an unscoped key: %s", res.body)
	}
}
