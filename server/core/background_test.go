package core

import (
	"context"
	"testing"
)

// TestLaneShare: batch lines take a share per lane and one more, one lane fewer while
// interactive requests come, and always at least one.
func TestLaneShare(t *testing.T) {
	ctx := context.Background()
	now := make(chan struct{}) // a closed stop: take answers at once whether there is room
	close(now)
	tests := []struct {
		name        string
		lanes       int
		interactive bool
		want        int
	}{
		{"every lane and one queued when no one else asks", 4, false, 5},
		{"one lane kept for interactive requests", 4, true, 3},
		{"a single lane is shared", 1, true, 1},
		{"a single lane and one queued", 1, false, 2},
		{"two lanes", 2, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l laneShare
			if tt.interactive {
				l.interactive()
			}
			got := 0
			for l.take(ctx, now, tt.lanes) {
				got++
				if got > 10 {
					break
				}
			}
			if got != tt.want {
				t.Fatalf("%d shares taken, want %d", got, tt.want)
			}
			// Giving one back lets the next line in.
			l.give()
			if !l.take(ctx, now, tt.lanes) {
				t.Fatal("no share after one was given back")
			}
			// A waiting line takes the share given back.
			took := make(chan bool)
			go func() { took <- l.take(ctx, nil, tt.lanes) }()
			l.give()
			if !<-took {
				t.Fatal("the waiting line did not get the share")
			}
		})
	}
}
