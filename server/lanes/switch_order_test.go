package lanes_test

import (
	"context"
	"sync"
	"testing"
)

// TestConcurrentSwitchesAgreeWithTheStore: two switches of one lane at once (a booking's
// start and an admin's switch) leave the lane serving the model its row says, the one a
// restart would load.
func TestConcurrentSwitchesAgreeWithTheStore(t *testing.T) {
	b := newBench(t)
	l := b.add("main", "cuda:0", "alpha")
	b.open()
	ctx := context.Background()
	for i := range 100 {
		var wg sync.WaitGroup
		for _, model := range []string{"beta", "gamma"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := b.mgr.Switch(ctx, "main", model); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		row, err := b.store.Lane(ctx, "main")
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Status().Model; got != row.Model {
			t.Fatalf("round %d: the lane switched to %s, its row says %s (a restart loads that)", i, got, row.Model)
		}
	}
}
