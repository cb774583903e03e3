package web_test

import (
	"context"
	"testing"

	"github.com/superfluid/superfluid/server/store"
)

// The request log lists what speculative decoding did and how the prefix cache served each
// request (issue 21).
func TestAdminRequestsSpeed(t *testing.T) {
	tt := newAdminTeam(t)
	rec := store.RequestRecord{ID: "q-spec", Model: "alpha", Endpoint: "/v1/chat/completions", Status: 200, PromptTokens: 900, CachedTokens: 800,
		SpecProposed: 60, SpecAccepted: 38, RestoredTokens: 512, CacheMiss: "diverged at token 801", CreatedAt: tt.Clock.Now()}
	if err := tt.Store.RecordRequest(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	root := tt.signIn(t, "root", "password0")
	r := root.do("GET", "/api/admin/requests", "")
	if r.status != 200 || len(r.list()) != 1 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	got := r.list()[0]
	if got["spec_proposed"] != 60.0 || got["spec_accepted"] != 38.0 || got["restored_tokens"] != 512.0 || got["cache_miss"] != "diverged at token 801" {
		t.Errorf("request = %v", got)
	}
}
