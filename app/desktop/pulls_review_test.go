package desktop_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/models/hf/hftest"
)

// TestPullKeptWhenOffline: a recorded download resumed while the Hub cannot be reached (the
// app started offline) fails, and stays recorded for the next start instead of being
// forgotten with its partial file.
func TestPullKeptWhenOffline(t *testing.T) {
	hub := hftest.New()
	const ref = "hf.co/owner/big:Q8_0"
	c, st, _ := startApp(t, t.TempDir(), hub)
	if err := st.AddPendingPull(context.Background(), ref, time.Now()); err != nil {
		t.Fatal(err)
	}
	hub.Close() // offline
	err := c.Pull(context.Background(), ref)
	if err == nil {
		t.Fatal("a pull from a Hub that is gone worked")
	}
	if got := c.PendingPulls(); !slices.Equal(got, []string{ref}) {
		t.Fatalf("pending after an offline resume: %v", got)
	}
}
