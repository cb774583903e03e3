package loadhistory

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/store"
)

// fakeEvents is a core.Service's model events, fed by the test.
type fakeEvents struct{ c chan core.ModelEvent }

func (f fakeEvents) ModelEvents(int) (<-chan core.ModelEvent, func()) { return f.c, func() {} }
func (f fakeEvents) EventModelID(name string) string {
	return strings.TrimSuffix(filepath.Base(name), ".gguf")
}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func describe(es []Entry) string {
	var b []string
	for _, e := range es {
		b = append(b, fmt.Sprintf("%s %s %s [%s]", e.Event, e.Lane, e.Model, e.Detail))
	}
	return strings.Join(b, "; ")
}

func TestWatchStoresModelEventsAndListMergesLaneWrites(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	ev := fakeEvents{c: make(chan core.ModelEvent, 8)}
	stop := Watch(ev, st, func(model string) []string {
		if model == "tiny" {
			return []string{"gpu0", "gpu1"}
		}
		return nil
	})
	defer stop()

	switched, _ := json.Marshal(map[string]any{"model": "tiny", "from": "old"})
	if _, err := st.AppendAudit(ctx, store.AuditEntry{Action: "lane.switch", Target: "gpu0", ActorName: "ann", Detail: switched}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond) // the model events come after the switch, in time order
	ev.c <- core.ModelEvent{Kind: core.ModelEventLoading, Model: "tiny"}
	ev.c <- core.ModelEvent{Kind: core.ModelEventPull, Model: "tiny"} // not history
	ev.c <- core.ModelEvent{Kind: core.ModelEventFailed, Model: "/models/tiny.gguf", Err: "out of memory"}

	var got []Entry
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		var err error
		if got, err = List(ctx, st, 0, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if len(got) == 3 {
			break
		}
	}
	want := "failed gpu0,gpu1 tiny [out of memory]; loading gpu0,gpu1 tiny []; switch gpu0 tiny [from old, by ann]"
	if describe(got) != want {
		t.Fatalf("List = %s\nwant %s", describe(got), want)
	}
	older, err := List(ctx, st, 0, got[1].At)
	if err != nil || describe(older) != "switch gpu0 tiny [from old, by ann]" {
		t.Errorf("List before the load = %s, %v", describe(older), err)
	}
	if one, _ := List(ctx, st, 1, time.Time{}); len(one) != 1 || one[0].Event != "failed" {
		t.Errorf("List(1) = %s", describe(one))
	}
	stop()
	stop()
}

func TestLaneEntryOfABooking(t *testing.T) {
	d, _ := json.Marshal(map[string]any{"model": "m", "person": "bob", "reason": "booking", "end": "2026-12-01T12:00:00Z"})
	e := laneEntry("switch", store.AuditEntry{Target: "gpu0", Detail: d})
	if e.Detail != "booking of bob until 2026-12-01T12:00:00Z" || e.Model != "m" || e.Lane != "gpu0" {
		t.Errorf("laneEntry = %+v", e)
	}
}
