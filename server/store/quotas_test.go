package store

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestTokenQuotas: a quota row round-trips (nil is "not set", 0 unlimited), both fields nil
// delete it, a negative one is refused by the table.
func TestTokenQuotas(t *testing.T) {
	s, ctx := openTest(t), context.Background()
	q, err := s.TokenQuotaOf(ctx, QuotaPerson, "person-1")
	if err != nil || q.Daily != nil || q.Monthly != nil {
		t.Fatalf("no row: %+v %v", q, err)
	}
	daily, zero := int64(1000), int64(0)
	if err := s.PutTokenQuota(ctx, TokenQuota{Kind: QuotaPerson, OwnerID: "person-1", Daily: &daily, Monthly: &zero}); err != nil {
		t.Fatal(err)
	}
	q, err = s.TokenQuotaOf(ctx, QuotaPerson, "person-1")
	if err != nil || q.Daily == nil || *q.Daily != 1000 || q.Monthly == nil || *q.Monthly != 0 || q.UpdatedAt.IsZero() {
		t.Fatalf("stored: %+v %v", q, err)
	}
	if q, _ := s.TokenQuotaOf(ctx, QuotaKey, "person-1"); q.Daily != nil {
		t.Fatalf("a key's row is not the person's: %+v", q)
	}
	neg := int64(-1)
	if err := s.PutTokenQuota(ctx, TokenQuota{Kind: QuotaKey, OwnerID: "key-1", Daily: &neg}); err == nil {
		t.Fatal("a negative quota was stored")
	}
	if err := s.PutTokenQuota(ctx, TokenQuota{Kind: QuotaPerson, OwnerID: "person-1"}); err != nil {
		t.Fatal(err)
	}
	if q, _ := s.TokenQuotaOf(ctx, QuotaPerson, "person-1"); q.Daily != nil || q.Monthly != nil {
		t.Fatalf("cleared: %+v", q)
	}
}

// TestSpentTokens: the day's and the month's sums of one person's (or key's) records,
// uncached and cached apart, and the sums read the covering index only.
func TestSpentTokens(t *testing.T) {
	s, ctx := openTest(t), context.Background()
	month := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	day := month.AddDate(0, 0, 9)
	recs := []RequestRecord{
		{ID: "last-month", PersonID: "p1", KeyID: "k1", PromptTokens: 1000, CreatedAt: month.Add(-time.Second)},
		{ID: "this-month", PersonID: "p1", KeyID: "k1", PromptTokens: 100, CachedTokens: 40, CompletionTokens: 10, CreatedAt: month.AddDate(0, 0, 3)},
		{ID: "today", PersonID: "p1", KeyID: "k2", PromptTokens: 20, CachedTokens: 5, CompletionTokens: 7, CreatedAt: day.Add(time.Hour)},
		{ID: "someone-else", PersonID: "p2", KeyID: "k3", PromptTokens: 500, CreatedAt: day.Add(time.Hour)},
	}
	if err := s.RecordRequests(ctx, recs); err != nil {
		t.Fatal(err)
	}
	d, m, err := s.SpentTokens(ctx, QuotaPerson, "p1", day, month)
	if err != nil {
		t.Fatal(err)
	}
	if d != (TokenSpend{Uncached: 22, Cached: 5}) || m != (TokenSpend{Uncached: 92, Cached: 45}) {
		t.Fatalf("person p1: day %+v month %+v", d, m)
	}
	d, m, _ = s.SpentTokens(ctx, QuotaKey, "k1", day, month)
	if d != (TokenSpend{}) || m != (TokenSpend{Uncached: 70, Cached: 40}) {
		t.Fatalf("key k1: day %+v month %+v", d, m)
	}
	for _, column := range []string{"person_id", "key_id"} {
		var plan strings.Builder
		rows, err := s.r.QueryContext(ctx, `EXPLAIN QUERY PLAN SELECT sum(CASE WHEN created_at >= '' THEN prompt_tokens END),
			sum(max(prompt_tokens - cached_tokens, 0) + completion_tokens) FROM requests WHERE `+column+` = 'x' AND created_at >= ''`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan.WriteString(detail + "\n")
		}
		rows.Close()
		if !strings.Contains(plan.String(), "COVERING INDEX") {
			t.Errorf("%s: the sum reads the rows, not an index alone:\n%s", column, plan.String())
		}
	}
}
