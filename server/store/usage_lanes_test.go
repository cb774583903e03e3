package store

import (
	"context"
	"reflect"
	"testing"
	"time"
)

// TestUsageByLane: records carry the lane that served them and its engine kind; usage groups
// and filters by lane, and a record reads back with both.
func TestUsageByLane(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	recs := []RequestRecord{
		{ID: "l1", Model: "m1", Status: 200, PromptTokens: 10, CompletionTokens: 5, LaneName: "gpu0-a", Engine: "local", CreatedAt: at},
		{ID: "l2", Model: "m2", Status: 200, PromptTokens: 3, CompletionTokens: 2, LaneName: "remote", Engine: "openai", CreatedAt: at},
		{ID: "l3", Model: "m2", Status: 502, LaneName: "remote", Engine: "openai", CreatedAt: at},
		{ID: "l4", Model: "m1", Status: 409, CreatedAt: at},
	}
	if err := s.RecordRequests(ctx, recs); err != nil {
		t.Fatal(err)
	}
	got, err := s.Usage(ctx, UsageQuery{ByLane: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []UsageRow{
		{Requests: 1, Errors: 1},
		{LaneName: "gpu0-a", Engine: "local", Requests: 1, PromptTokens: 10, CompletionTokens: 5},
		{LaneName: "remote", Engine: "openai", Requests: 2, Errors: 1, PromptTokens: 3, CompletionTokens: 2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("by lane:\ngot  %+v\nwant %+v", got, want)
	}
	got, err = s.Usage(ctx, UsageQuery{Lane: "remote", ByModel: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := []UsageRow{{Model: "m2", Requests: 2, Errors: 1, PromptTokens: 3, CompletionTokens: 2}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("one lane:\ngot  %+v\nwant %+v", got, want)
	}
	r, err := s.Request(ctx, "l2")
	if err != nil {
		t.Fatal(err)
	}
	if r.LaneName != "remote" || r.Engine != "openai" {
		t.Fatalf("record read back with lane %q engine %q", r.LaneName, r.Engine)
	}
}
