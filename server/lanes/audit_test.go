package lanes_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/store"
)

// TestLaneWritesAudited: adding, switching and removing a lane each write one audit entry
// naming the lane and what changed; the upstream key is never in one (has_key says it is
// there) and a password in the URL is masked.
func TestLaneWritesAudited(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "superfluid.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var mu sync.Mutex
	var log []string
	m := lanes.NewManager(lanes.Config{Store: st, Devices: testDevices,
		Audit: func(_ context.Context, action, lane string, detail map[string]any) error {
			raw, _ := json.Marshal(detail)
			mu.Lock()
			log = append(log, action+" "+lane+" "+string(raw))
			mu.Unlock()
			return nil
		}})
	if _, err := m.Add(ctx, lanes.NewLane{Name: "up", Device: "cpu", Engine: lanes.OpenAI, Model: "qwen",
		UpstreamKey: "sk-upstream-secret", Config: store.LaneConfig{URL: "http://me:hunter2@10.0.0.5:8000/v1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Switch(ctx, "up", "llama"); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove(ctx, "up"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Switch(ctx, "up", "x"); err == nil {
		t.Fatal("a switch of a removed lane succeeded")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(log) != 3 || !strings.HasPrefix(log[0], "lane.create up ") || !strings.HasPrefix(log[1], "lane.switch up ") ||
		!strings.HasPrefix(log[2], "lane.remove up ") {
		t.Fatalf("audited %q, want add, switch and remove of up (a failed write is not audited)", log)
	}
	all := strings.Join(log, "\n")
	for _, secret := range []string{"sk-upstream-secret", "hunter2"} {
		if strings.Contains(all, secret) {
			t.Fatalf("the audit log holds a secret: %s", all)
		}
	}
	for _, want := range []string{`"has_key":true`, `"from":"qwen"`, `"model":"llama"`, `"engine":"openai"`} {
		if !strings.Contains(all, want) {
			t.Errorf("the audit log lacks %s: %s", want, all)
		}
	}
}
