package store

import (
	"context"
	"reflect"
	"testing"
	"time"
)

// TestUsage: request records summed by key, model and day, within a date range, for one key
// (by id or name) or those made without a key.
func TestUsage(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	day1 := time.Date(2026, 5, 1, 23, 0, 0, 0, time.UTC)
	day2 := time.Date(2026, 5, 2, 1, 0, 0, 0, time.UTC)
	recs := []RequestRecord{
		{ID: "a1", KeyID: "key-a", KeyName: "alice", Model: "m1", Status: 200, PromptTokens: 10, CachedTokens: 4, CompletionTokens: 5, Total: time.Second, CreatedAt: day1},
		{ID: "a2", KeyID: "key-a", KeyName: "alice", Model: "m1", Status: 200, PromptTokens: 20, CompletionTokens: 7, Total: 2 * time.Second, CreatedAt: day2},
		{ID: "a3", KeyID: "key-a", KeyName: "alice", Model: "m2", Status: 429, CreatedAt: day2},
		{ID: "b1", KeyID: "policy:bob", KeyName: "bob", Model: "m1", Status: 200, PromptTokens: 1, CompletionTokens: 1, Total: time.Millisecond, CreatedAt: day1},
		{ID: "n1", Model: "m1", Status: 499, PromptTokens: 3, CreatedAt: day2},
	}
	if err := s.RecordRequests(ctx, recs); err != nil {
		t.Fatal(err)
	}
	str := func(s string) *string { return &s }
	tests := []struct {
		name string
		q    UsageQuery
		want []UsageRow
	}{
		{"one total", UsageQuery{}, []UsageRow{{Requests: 5, Errors: 2, PromptTokens: 34, CachedTokens: 4, CompletionTokens: 13, Duration: 3001 * time.Millisecond}}},
		{"by key", UsageQuery{ByKey: true}, []UsageRow{
			{Requests: 1, Errors: 1, PromptTokens: 3},
			{KeyID: "key-a", KeyName: "alice", Requests: 3, Errors: 1, PromptTokens: 30, CachedTokens: 4, CompletionTokens: 12, Duration: 3 * time.Second},
			{KeyID: "policy:bob", KeyName: "bob", Requests: 1, PromptTokens: 1, CompletionTokens: 1, Duration: time.Millisecond},
		}},
		{"by key, model and day for alice by name", UsageQuery{ByKey: true, ByModel: true, ByDay: true, Key: str("alice")}, []UsageRow{
			{KeyID: "key-a", KeyName: "alice", Model: "m1", Day: "2026-05-01", Requests: 1, PromptTokens: 10, CachedTokens: 4, CompletionTokens: 5, Duration: time.Second},
			{KeyID: "key-a", KeyName: "alice", Model: "m1", Day: "2026-05-02", Requests: 1, PromptTokens: 20, CompletionTokens: 7, Duration: 2 * time.Second},
			{KeyID: "key-a", KeyName: "alice", Model: "m2", Day: "2026-05-02", Requests: 1, Errors: 1},
		}},
		{"by id, one model", UsageQuery{Key: str("policy:bob"), Model: "m1"}, []UsageRow{{Requests: 1, PromptTokens: 1, CompletionTokens: 1, Duration: time.Millisecond}}},
		{"without a key", UsageQuery{Key: str(""), ByDay: true}, []UsageRow{{Day: "2026-05-02", Requests: 1, Errors: 1, PromptTokens: 3}}},
		{"a date range", UsageQuery{From: time.Date(2026, 5, 2, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 5, 3, 0, 0, 0, 0, time.UTC), ByModel: true}, []UsageRow{
			{Model: "m1", Requests: 2, Errors: 1, PromptTokens: 23, CompletionTokens: 7, Duration: 2 * time.Second},
			{Model: "m2", Requests: 1, Errors: 1},
		}},
		{"nothing in range", UsageQuery{From: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)}, []UsageRow{}},
		{"an unknown key", UsageQuery{Key: str("carol"), ByKey: true}, []UsageRow{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Usage(ctx, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
