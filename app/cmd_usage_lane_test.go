package app

import (
	"strings"
	"testing"

	"github.com/superfluid/superfluid/server/core"
)

// TestPrintUsageByLane: superfluid usage --by lane names each row's lane and its engine kind.
func TestPrintUsageByLane(t *testing.T) {
	var b strings.Builder
	printUsage(&b, []string{core.GroupLane}, []core.UsageRow{{LaneName: "big", Engine: "openai", Requests: 2}, {Requests: 1}})
	out := b.String()
	if !strings.Contains(out, "LANE") || !strings.Contains(out, "big (openai)") || !strings.Contains(out, "(no lane)") {
		t.Fatalf("--by lane printed:\n%s", out)
	}
}
