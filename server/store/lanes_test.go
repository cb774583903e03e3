package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestLanes: a lane is stored, listed and found by id or name; a second lane with its name is
// refused; the upstream key never comes back in a read but is there for the engine; a switch
// and a removal reach the row.
func TestLanes(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	l := Lane{ID: "lane-1", Name: "big", Device: "cuda:0", Engine: "openai", Model: "qwen",
		Config: LaneConfig{URL: "http://10.0.0.2:8000/v1", ServedModel: "Qwen/Qwen3"}, UpstreamKey: "sk-up-secret", CreatedAt: at}
	if err := s.InsertLane(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertLane(ctx, Lane{ID: "lane-2", Name: "big", Device: "cpu", Engine: "local", Model: "m"}); !errors.Is(err, ErrLaneNameTaken) {
		t.Fatalf("duplicate name: %v", err)
	}
	got, err := s.Lanes(ctx)
	if err != nil || len(got) != 1 {
		t.Fatalf("Lanes = %v, %v", got, err)
	}
	g := got[0]
	if g.UpstreamKey != "" || !g.HasKey || g.Config != l.Config || g.Device != "cuda:0" || g.Engine != "openai" || !g.CreatedAt.Equal(at) || !g.UpdatedAt.Equal(at) {
		t.Fatalf("listed lane %+v", g)
	}
	for _, name := range []string{"lane-1", "big"} {
		if g, err := s.Lane(ctx, name); err != nil || g.ID != "lane-1" || g.UpstreamKey != "" {
			t.Fatalf("Lane(%s) = %+v, %v", name, g, err)
		}
	}
	if _, err := s.Lane(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing lane: %v", err)
	}
	if key, err := s.LaneUpstreamKey(ctx, "lane-1"); err != nil || key != "sk-up-secret" {
		t.Fatalf("LaneUpstreamKey = %q, %v", key, err)
	}
	later := at.Add(time.Hour)
	if err := s.SetLaneModel(ctx, "lane-1", "llama", later); err != nil {
		t.Fatal(err)
	}
	if g, _ := s.Lane(ctx, "big"); g.Model != "llama" || !g.UpdatedAt.Equal(later) {
		t.Fatalf("after switch %+v", g)
	}
	if err := s.SetLaneModel(ctx, "nope", "x", later); !errors.Is(err, ErrNotFound) {
		t.Fatalf("switch missing: %v", err)
	}
	if err := s.DeleteLane(ctx, "lane-1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteLane(ctx, "lane-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
	if got, _ := s.Lanes(ctx); len(got) != 0 {
		t.Fatalf("after delete %v", got)
	}
}
