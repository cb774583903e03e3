package lanes_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/lanes"
)

// TestRecordsCarryLane: a routed request's record names the lane that served it and its
// engine kind, usage groups by lane, and a routing refusal is recorded with its own status
// (403 gpu_reserved, not a 500).
func TestRecordsCarryLane(t *testing.T) {
	b := newBenchRecording(t, true)
	n := 0
	send := func(person, model string) error {
		n++
		ctx := auth.NewContext(context.Background(), &auth.Identity{ID: "key-" + person, Name: person})
		_, err := b.svc.Chat(ctx, &core.ChatRequest{ID: fmt.Sprintf("chatcmpl-%d", n), Model: model, Stream: true,
			Messages: []chat.Message{{Role: "user", Content: "hello"}}}, func(int, llm.Event) error { return nil })
		return err
	}
	b.open()
	b.add("a", "cuda:0", "alpha")
	b.add("b", "cuda:1", "beta")
	if err := send("alice", "alpha"); err != nil {
		t.Fatal(err)
	}
	if err := send("alice", "beta"); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	b.booked.set(lanes.Reservation{Lane: "b", PersonID: "key-bob", Start: now.Add(-time.Minute), End: now.Add(time.Hour)})
	if err := send("alice", "beta"); code(err) != "gpu_reserved" {
		t.Fatalf("beta while bob books lane b: %v", err)
	}
	ctx := context.Background()
	if err := b.svc.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.store.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := b.svc.Usage(ctx, core.UsageQuery{GroupBy: []string{core.GroupLane}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]core.UsageRow{}
	for _, r := range rows {
		got[r.LaneName] = r
	}
	if r := got["a"]; r.Engine != "local" || r.Requests != 1 || r.Errors != 0 {
		t.Errorf("lane a: %+v", r)
	}
	if r := got["b"]; r.Engine != "local" || r.Requests != 1 {
		t.Errorf("lane b: %+v", r)
	}
	if r := got[""]; r.Requests != 1 || r.Errors != 1 {
		t.Errorf("the refused request (no lane served it): %+v", r)
	}
	recs, err := b.store.RecentRequests(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	statuses := map[int]int{}
	for _, r := range recs {
		statuses[r.Status]++
	}
	if statuses[403] != 1 || statuses[200] != 2 {
		t.Errorf("recorded statuses %v, want two 200 and one 403", statuses)
	}
}
