package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func logIDs(rs []RequestRecord) string {
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	return strings.Join(ids, ",")
}

func TestRequestLogFiltersAndPages(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	recs := []RequestRecord{
		{ID: "r1", Model: "a", Status: 200, PersonID: "p1", PersonName: "ann", LaneName: "gpu0"},
		{ID: "r2", Model: "b", Status: 429, PersonID: "p2", PersonName: "bob", LaneName: "gpu1"},
		{ID: "r3", Model: "a", Status: 500, PersonID: "p1", PersonName: "ann", LaneName: "gpu0"},
		{ID: "r4", Model: "a", Status: 200, PersonID: "p2", PersonName: "bob", LaneName: "gpu0"},
		{ID: "r5", Model: "b", Status: 404, PersonID: "p1", PersonName: "ann", LaneName: "gpu1"},
	}
	for i := range recs {
		recs[i].CreatedAt = base.Add(time.Duration(i) * time.Minute)
	}
	if err := s.RecordRequests(ctx, recs); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		q    RequestLogQuery
		want string
	}{
		{"all, newest first", RequestLogQuery{}, "r5,r4,r3,r2,r1"},
		{"person by name", RequestLogQuery{Person: "ann"}, "r5,r3,r1"},
		{"person by id", RequestLogQuery{Person: "p2"}, "r4,r2"},
		{"model and lane", RequestLogQuery{Model: "a", Lane: "gpu0"}, "r4,r3,r1"},
		{"a status", RequestLogQuery{Status: "429"}, "r2"},
		{"a class", RequestLogQuery{Status: "4xx"}, "r5,r2"},
		{"errors", RequestLogQuery{Status: "error"}, "r5,r3,r2"},
		{"ok", RequestLogQuery{Status: "ok"}, "r4,r1"},
		{"since and until", RequestLogQuery{Since: base.Add(time.Minute), Until: base.Add(3 * time.Minute)}, "r3,r2"},
		{"a page", RequestLogQuery{Limit: 2}, "r5,r4"},
		{"the next page", RequestLogQuery{Limit: 2, Before: "r4"}, "r3,r2"},
		{"the last page", RequestLogQuery{Limit: 2, Before: "r2"}, "r1"},
		{"a page with a filter", RequestLogQuery{Person: "ann", Before: "r5"}, "r3,r1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.RequestLog(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if logIDs(got) != tc.want {
				t.Errorf("RequestLog(%+v) = %s, want %s", tc.q, logIDs(got), tc.want)
			}
		})
	}
	if _, err := s.RequestLog(ctx, RequestLogQuery{Status: "teapot"}); !errors.Is(err, ErrBadStatusFilter) {
		t.Errorf("status teapot: %v, want ErrBadStatusFilter", err)
	}
	if _, err := s.RequestLog(ctx, RequestLogQuery{Before: "nope"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("before an unknown id: %v, want ErrNotFound", err)
	}
}

func TestRequestSeries(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	from := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var recs []RequestRecord
	for i, at := range []time.Duration{0, 30 * time.Second, 59 * time.Second, 2*time.Minute + time.Second, 3 * time.Minute} {
		recs = append(recs, RequestRecord{ID: fmt.Sprint("s", i), Status: 200, PromptTokens: 10, CompletionTokens: 1, CreatedAt: from.Add(at)})
	}
	recs = append(recs, RequestRecord{ID: "before", Status: 200, CreatedAt: from.Add(-time.Second)})
	if err := s.RecordRequests(ctx, recs); err != nil {
		t.Fatal(err)
	}
	got, err := s.RequestSeries(ctx, from, from.Add(3*time.Minute), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, p := range got {
		fmt.Fprintf(&b, "%s:%d/%d/%d ", p.At.Format("15:04"), p.Requests, p.PromptTokens, p.CompletionTokens)
	}
	if want := "10:00:3/30/3 10:01:0/0/0 10:02:1/10/1 "; b.String() != want {
		t.Errorf("series = %s, want %s (the one at 10:03 is past the window)", b.String(), want)
	}
	if _, err := s.RequestSeries(ctx, from, from, time.Minute); err == nil {
		t.Error("an empty window was accepted")
	}
}

func TestRuntimeEvents(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i, ev := range []string{"loading", "loaded", "unloaded"} {
		if _, err := s.AppendRuntimeEvent(ctx, RuntimeEvent{At: at.Add(time.Duration(i) * time.Second), Event: ev, Lane: "gpu0", Model: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.RuntimeEvents(ctx, 2, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Event != "unloaded" || got[1].Event != "loaded" || got[0].Lane != "gpu0" || !got[1].At.Equal(at.Add(time.Second)) {
		t.Errorf("RuntimeEvents(2) = %+v", got)
	}
	older, err := s.RuntimeEvents(ctx, 0, at.Add(time.Second))
	if err != nil || len(older) != 1 || older[0].Event != "loading" {
		t.Errorf("before 10:00:01 = %+v, %v", older, err)
	}
	if _, err := s.AppendRuntimeEvent(ctx, RuntimeEvent{}); err == nil {
		t.Error("an event without a name was stored")
	}
}
