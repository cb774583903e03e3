package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"
)

func TestRequestRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	tokyo := time.FixedZone("JST", 9*60*60)

	tests := []struct {
		name string
		in   RequestRecord
		want RequestRecord // CreatedAt compared separately when zero
	}{
		{
			name: "every field set",
			in: RequestRecord{
				ID: "chatcmpl-full", Model: "tinyllama-1.1b-q8_0", Endpoint: "/v1/chat/completions",
				Stream: true, Status: 200, Error: "", FinishReason: "stop",
				PromptTokens: 123, CompletionTokens: 45, CachedTokens: 67, Lane: 3,
				Queue: 1500 * time.Microsecond, Prefill: 250 * time.Millisecond,
				Decode: 3*time.Second + 7*time.Microsecond, Total: 3*time.Second + 251*time.Millisecond + 507*time.Microsecond,
				ClientDisconnected: true, KeyID: "policy:alice", KeyName: "alice",
				CreatedAt: time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.UTC),
			},
		},
		{
			name: "failure with text and a non-UTC time",
			in: RequestRecord{
				ID: "chatcmpl-fail", Model: "modèle ☃", Endpoint: "/v1/completions",
				Status: 503, Error: "worker crashed: \"engine or worker failure\"\nretry later",
				FinishReason: "", Lane: -1,
				CreatedAt: time.Date(2025, 12, 31, 23, 59, 59, 0, tokyo),
			},
		},
		{
			name: "durations truncate to microseconds",
			in: RequestRecord{
				ID: "chatcmpl-trunc", Queue: 1999 * time.Nanosecond, Prefill: 999 * time.Nanosecond,
				Decode: time.Hour + 1, Total: -5 * time.Microsecond,
				CreatedAt: time.Date(2024, 2, 29, 0, 0, 0, 1, time.UTC),
			},
			want: RequestRecord{
				ID: "chatcmpl-trunc", Queue: time.Microsecond, Prefill: 0,
				Decode: time.Hour, Total: -5 * time.Microsecond,
				CreatedAt: time.Date(2024, 2, 29, 0, 0, 0, 1, time.UTC),
			},
		},
		{
			name: "zero CreatedAt becomes now",
			in:   RequestRecord{ID: "chatcmpl-now", Model: "m", Status: 200},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if want.ID == "" {
				want = tt.in
			}
			before := time.Now()
			if err := s.RecordRequest(ctx, tt.in); err != nil {
				t.Fatalf("RecordRequest: %v", err)
			}
			after := time.Now()
			got, err := s.Request(ctx, tt.in.ID)
			if err != nil {
				t.Fatalf("Request: %v", err)
			}

			if got.CreatedAt.Location() != time.UTC {
				t.Errorf("CreatedAt location = %v, want UTC", got.CreatedAt.Location())
			}
			if tt.in.CreatedAt.IsZero() {
				// Stored times have no monotonic reading; compare wall clocks.
				if got.CreatedAt.Before(before.Round(0)) || got.CreatedAt.After(after.Round(0)) {
					t.Errorf("CreatedAt = %v, want between %v and %v", got.CreatedAt, before, after)
				}
			} else if !got.CreatedAt.Equal(want.CreatedAt) {
				t.Errorf("CreatedAt = %v, want %v", got.CreatedAt, want.CreatedAt)
			}
			got.CreatedAt, want.CreatedAt = time.Time{}, time.Time{}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestRequestErrors(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	if err := s.RecordRequest(ctx, RequestRecord{ID: "dup"}); err != nil {
		t.Fatal(err)
	}

	if _, err := s.Request(ctx, "absent"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Request(absent) error = %v, want ErrNotFound", err)
	}
	if err := s.RecordRequest(ctx, RequestRecord{ID: "dup", Model: "other"}); err == nil {
		t.Error("recording an existing ID succeeded")
	}
	if got, err := s.Request(ctx, "dup"); err != nil || got.Model != "" {
		t.Errorf("the first record changed: %+v, %v", got, err)
	}
	if err := s.RecordRequest(ctx, RequestRecord{}); err == nil {
		t.Error("recording an empty ID succeeded")
	}
}

func TestRecentRequests(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	base := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

	// Recorded out of time order. "half" is 0.5s after "whole": RFC3339Nano
	// text ("...00.5Z" < "...00Z") would sort it first.
	records := []struct {
		id string
		at time.Time
	}{
		{"middle", base.Add(-time.Hour)},
		{"half", base.Add(500 * time.Millisecond)},
		{"oldest", base.Add(-48 * time.Hour)},
		{"whole", base},
		{"newest", base.Add(time.Minute)},
		{"tie-first", base.Add(-2 * time.Hour)},
		{"tie-second", base.Add(-2 * time.Hour)},
	}
	for _, r := range records {
		if err := s.RecordRequest(ctx, RequestRecord{ID: r.id, CreatedAt: r.at}); err != nil {
			t.Fatal(err)
		}
	}
	all := []string{"newest", "half", "whole", "middle", "tie-second", "tie-first", "oldest"}

	tests := []struct {
		limit int
		want  []string
	}{
		{-1, []string{}},
		{0, []string{}},
		{1, all[:1]},
		{3, all[:3]},
		{len(all), all},
		{100, all},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint("limit ", tt.limit), func(t *testing.T) {
			got, err := s.RecentRequests(ctx, tt.limit)
			if err != nil {
				t.Fatalf("RecentRequests: %v", err)
			}
			if got == nil {
				t.Fatal("RecentRequests returned nil, want a slice")
			}
			ids := []string{}
			for _, r := range got {
				ids = append(ids, r.ID)
			}
			if !reflect.DeepEqual(ids, tt.want) {
				t.Errorf("ids = %v, want %v", ids, tt.want)
			}
		})
	}
}

// TestConcurrentRecord writes from 20 goroutines through two stores on the
// same file, so the writes contend for SQLite's lock across connections, as
// two processes would; busy_timeout must absorb it.
func TestConcurrentRecord(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "superfluid.db")
	var stores []*Store
	for range 2 {
		s, err := Open(path)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer s.Close()
		stores = append(stores, s)
	}

	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs <- stores[i%2].RecordRequest(ctx, RequestRecord{
				ID: fmt.Sprintf("chatcmpl-%02d", i), Model: "m", Status: 200, Lane: i,
				CompletionTokens: i * 10,
			})
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("RecordRequest: %v", err)
		}
	}

	got, err := stores[0].RecentRequests(ctx, 2*n)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("%d records landed, want %d", len(got), n)
	}
	for i := range n {
		r, err := stores[1].Request(ctx, fmt.Sprintf("chatcmpl-%02d", i))
		if err != nil {
			t.Errorf("record %d: %v", i, err)
			continue
		}
		if r.Lane != i || r.CompletionTokens != i*10 {
			t.Errorf("record %d = %+v", i, r)
		}
	}
}
