package lanes_test

import (
	"context"
	"errors"
	"testing"

	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/store"
)

// TestCommandLaneModelIsNoOption: a command lane's model becomes a word of its server's command
// line, and a switch may come from a member's booking (FollowBookings): a model beginning with
// "-" (an option, "--trust-remote-code") is refused when the lane is added or switched, and the
// lane keeps its model.
func TestCommandLaneModelIsNoOption(t *testing.T) {
	b := newBench(t)
	ctx := context.Background()
	cmd := store.LaneConfig{Command: "vllm serve {model} --port {port}"}
	if _, err := b.mgr.Add(ctx, lanes.NewLane{Name: "bad", Device: "cuda:0", Engine: lanes.Command, Model: "--trust-remote-code", Config: cmd}); !errors.Is(err, lanes.ErrUnknownModel) {
		t.Fatalf("add a command lane with the model --trust-remote-code: %v, want ErrUnknownModel", err)
	}
	if _, err := b.mgr.Add(ctx, lanes.NewLane{Name: "cmd", Device: "cuda:0", Engine: lanes.Command, Model: "org/alpha", Config: cmd}); err != nil {
		t.Fatal(err)
	}
	settle(t, b.laneNamed("cmd"))
	if _, err := b.mgr.Switch(ctx, "cmd", "-c/etc/x"); !errors.Is(err, lanes.ErrUnknownModel) {
		t.Fatalf("switch a command lane to -c/etc/x: %v, want ErrUnknownModel", err)
	}
	if row, err := b.store.Lane(ctx, "cmd"); err != nil || row.Model != "org/alpha" {
		t.Fatalf("after the refused switch: %+v, %v", row, err)
	}
}
