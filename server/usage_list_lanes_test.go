package server

import (
	"encoding/json"
	"testing"

	"github.com/superfluid/superfluid/server/core"
)

// TestUsageListByLane: rows grouped by lane (team mode's group_by=lane) say which lane they
// sum and its engine kind; rows not grouped by lane leave both out.
func TestUsageListByLane(t *testing.T) {
	rows := []core.UsageRow{{LaneName: "big", Engine: "openai", Requests: 2}, {Requests: 1}}
	decode := func(groupBy []string) []map[string]any {
		b, err := json.Marshal(UsageList(core.UsageQuery{GroupBy: groupBy}, "", "", rows))
		if err != nil {
			t.Fatal(err)
		}
		var out struct{ Data []map[string]any }
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return out.Data
	}
	got := decode([]string{core.GroupLane})
	if got[0]["lane"] != "big" || got[0]["engine"] != "openai" || got[1]["lane"] != "" || got[1]["engine"] != "" {
		t.Fatalf("grouped by lane: %v, want lane big (openai), then lane \"\" (no lane)", got)
	}
	if _, ok := decode([]string{core.GroupModel})[0]["lane"]; ok {
		t.Fatal("a row not grouped by lane names a lane")
	}
}
