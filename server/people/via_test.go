package people_test

import (
	"context"
	"testing"

	"github.com/superfluid/superfluid/server/people"
)

// TestVia: a context marked WithVia says where its change came from; an unmarked one says
// nothing (the audit hooks keep their own actor).
func TestVia(t *testing.T) {
	if got := people.ViaFrom(context.Background()); got != "" {
		t.Fatalf("unmarked: %q", got)
	}
	if got := people.ViaFrom(people.WithVia(context.Background(), "desktop")); got != "desktop" {
		t.Fatalf("marked: %q", got)
	}
}
