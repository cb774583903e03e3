package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/server/store"
)

// seedRequests records requests at the test clock's recent past: bob's and root's on two
// models and lanes, one an error, and one older than a day.
func seedRequests(t *testing.T, tt *adminTeam) time.Time {
	t.Helper()
	now := tt.Clock.Now()
	recs := []store.RequestRecord{
		{ID: "q1", Model: "alpha", Endpoint: "/v1/chat/completions", Status: 200, PromptTokens: 10, CompletionTokens: 5, CachedTokens: 2, PersonName: "bob", PersonID: "p-bob", KeyName: "bobs", LaneName: "main", Engine: "local", Total: 1500 * time.Millisecond, CreatedAt: now.Add(-3 * time.Hour)},
		{ID: "q2", Model: "alpha", Endpoint: "/v1/chat/completions", Status: 429, PersonName: "bob", PersonID: "p-bob", KeyName: "bobs", LaneName: "main", CreatedAt: now.Add(-2 * time.Hour)},
		{ID: "q3", Model: "beta", Endpoint: "/v1/messages", Status: 200, PromptTokens: 100, CompletionTokens: 50, PersonName: "root", PersonID: "p-root", KeyName: "roots", LaneName: "second", CreatedAt: now.Add(-time.Hour)},
		{ID: "q0", Model: "beta", Endpoint: "/v1/messages", Status: 200, PromptTokens: 1000, PersonName: "root", PersonID: "p-root", CreatedAt: now.Add(-30 * time.Hour)},
	}
	if err := tt.Store.RecordRequests(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	return now
}

func TestAdminStats(t *testing.T) {
	tt := newAdminTeam(t)
	now := seedRequests(t, tt)
	root := tt.signIn(t, "root", "password0")
	r := root.do("GET", "/api/admin/stats", "")
	o := r.obj
	if r.status != 200 || o["window"] != "24h" || o["requests"] != 3.0 || o["errors"] != 1.0 || o["prompt_tokens"] != 110.0 ||
		o["completion_tokens"] != 55.0 || o["cached_tokens"] != 2.0 || o["active_lanes"] != 1.0 || o["queue_depth"] != 0.0 || o["to"] != float64(now.Unix()) {
		t.Fatalf("stats: %d %s", r.status, r.body)
	}
	byPerson := fmt.Sprint(o["by_person"])
	if !strings.Contains(byPerson, "person:bob person_id:p-bob requests:2 tokens:15") || !strings.Contains(byPerson, "person:root person_id:p-root requests:1 tokens:150") {
		t.Errorf("by_person = %s", byPerson)
	}
	if byModel := fmt.Sprint(o["by_model"]); byModel != "[map[model:alpha requests:2 tokens:15] map[model:beta requests:1 tokens:150]]" {
		t.Errorf("by_model = %s", byModel)
	}
	series, _ := o["series"].([]any)
	var total float64
	for _, p := range series {
		total += p.(map[string]any)["requests"].(float64)
	}
	if len(series) != 48 || total != 3 || o["bucket_seconds"] != 1800.0 {
		t.Errorf("series: %d points, %v requests, bucket %v; want 48 half-hours holding the 3", len(series), total, o["bucket_seconds"])
	}
	if r := root.do("GET", "/api/admin/stats?window=7d", ""); r.obj["requests"] != 4.0 {
		t.Errorf("7d: %s", r.body)
	}
	for _, w := range []string{"soon", "10s", "500d", "-1h"} {
		if r := root.do("GET", "/api/admin/stats?window="+w, ""); r.status != 400 || r.param() != "window" {
			t.Errorf("window=%s: %d %s", w, r.status, r.body)
		}
	}
}

func TestAdminRequests(t *testing.T) {
	tt := newAdminTeam(t)
	now := seedRequests(t, tt)
	root := tt.signIn(t, "root", "password0")
	r := root.do("GET", "/api/admin/requests", "")
	if r.status != 200 || field(r.list(), "id") != "q3,q2,q1,q0" {
		t.Fatalf("all: %d %s", r.status, r.body)
	}
	first := r.list()[2]
	if first["person"] != "bob" || first["key"] != "bobs" || first["lane"] != "main" || first["engine"] != "local" || first["route"] != "/v1/chat/completions" ||
		first["duration_ms"] != 1500.0 || first["cached_tokens"] != 2.0 || first["at"] != float64(now.Add(-3*time.Hour).Unix()) {
		t.Errorf("q1 = %v", first)
	}
	for _, tc := range []struct{ query, want string }{
		{"?person=bob", "q2,q1"},
		{"?person=p-root&model=beta", "q3,q0"},
		{"?lane=main&status=4xx", "q2"},
		{"?status=error", "q2"},
		{"?since=" + fmt.Sprint(now.Add(-150*time.Minute).Unix()), "q3,q2"},
		{"?until=" + now.Add(-150*time.Minute).Format(time.RFC3339), "q1,q0"},
		{"?limit=2", "q3,q2"},
		{"?limit=2&before=q2", "q1,q0"},
	} {
		if r := root.do("GET", "/api/admin/requests"+tc.query, ""); r.status != 200 || field(r.list(), "id") != tc.want {
			t.Errorf("%s: %d %s, want %s", tc.query, r.status, field(r.list(), "id"), tc.want)
		}
	}
	for _, tc := range []struct{ query, param string }{
		{"?status=teapot", "status"}, {"?limit=0", "limit"}, {"?limit=5000", "limit"}, {"?since=tomorrow", "since"}, {"?before=nope", "before"},
	} {
		if r := root.do("GET", "/api/admin/requests"+tc.query, ""); r.status != 400 || r.param() != tc.param {
			t.Errorf("%s: %d %s, want 400 param %s", tc.query, r.status, r.body, tc.param)
		}
	}
}
