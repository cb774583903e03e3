package bookings

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/server/store"
)

// TestBookModelChecked: a lane booking's model must be one the lane can load (Config.CheckModel):
// an unregistered one is a 400 that names it, and nothing is booked; a registered one is kept by
// the name CheckModel gives (the catalog's id).
func TestBookModelChecked(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "superfluid.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc, err := New(Config{Store: st, Now: func() time.Time { return t0 },
		ResolveLane: func(_ context.Context, lane string) (LaneRef, error) {
			return LaneRef{ID: "lane-" + lane, Device: "gpu0"}, nil
		},
		CheckModel: func(_ context.Context, laneID, model string) (string, error) {
			if laneID == "lane-a" && model == "qwen3" {
				return "qwen3-4b-q4_k_m", nil
			}
			return "", errors.New("no such model in the catalog")
		}})
	if err != nil {
		t.Fatal(err)
	}
	alice := as("alice", false)
	_, err = svc.Book(alice, NewBooking{Lane: "a", Model: "nope-7b", Start: t0, End: t0.Add(time.Hour)})
	if status, _ := statusOf(err); status != 400 || !strings.Contains(err.Error(), `"nope-7b"`) {
		t.Fatalf("an unregistered model: %v (status %d), want a 400 naming it", err, status)
	}
	if list, err := st.Bookings(context.Background(), store.BookingFilter{}); err != nil || len(list) != 0 {
		t.Fatalf("the refused booking is stored: %v %v", list, err)
	}
	b, err := svc.Book(alice, NewBooking{Lane: "a", Model: "qwen3", Start: t0, End: t0.Add(time.Hour)})
	if err != nil || b.Model != "qwen3-4b-q4_k_m" {
		t.Fatalf("a registered model: %+v %v", b, err)
	}
	if _, err := svc.Book(alice, NewBooking{Lane: "b", Start: t0, End: t0.Add(time.Hour)}); err != nil {
		t.Fatalf("a lane booking without a model is not checked: %v", err)
	}
}
