package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestSharedPrefixes: shared prefixes are stored and listed oldest first with every field, and
// removed by id; removing a missing one is ErrNotFound.
func TestSharedPrefixes(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	a := SharedPrefix{ID: "sp-1", Name: "team", Text: "You are the team's assistant.", CreatedBy: "root", CreatedAt: at}
	b := SharedPrefix{ID: "sp-2", Model: "qwen", Text: "Answer in French.", CreatedAt: at.Add(time.Minute)}
	for _, p := range []SharedPrefix{b, a} {
		if err := s.InsertSharedPrefix(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.SharedPrefixes(ctx)
	if err != nil || len(got) != 2 {
		t.Fatalf("SharedPrefixes = %v, %v", got, err)
	}
	if got[0] != a || got[1] != b {
		t.Fatalf("listed %+v, want %+v then %+v", got, a, b)
	}
	if err := s.InsertSharedPrefix(ctx, a); err == nil {
		t.Fatal("a second prefix with the same id was stored")
	}
	if err := s.DeleteSharedPrefix(ctx, "sp-1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSharedPrefix(ctx, "sp-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("removing it again: %v", err)
	}
	if got, _ := s.SharedPrefixes(ctx); len(got) != 1 || got[0].ID != "sp-2" {
		t.Fatalf("after removal: %+v", got)
	}
}
