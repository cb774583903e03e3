package app

import (
	"context"
	"testing"
	"time"

	"github.com/superfluid/superfluid/server/lanes"
)

// TestTeamLanesShareAModel: two local lanes serving one catalog model share its engine;
// removing one leaves the model loaded for the other, and removing the last unloads it.
func TestTeamLanesShareAModel(t *testing.T) {
	cfg := testConfig(t, testModel)
	cfg.Team = true
	a, _ := startServer(t, cfg, false)
	model := a.preload.ID
	m := a.team.lanesManager()
	ctx := context.Background()
	for _, name := range []string{"one", "two"} {
		if _, err := m.Add(ctx, lanes.NewLane{Name: name, Device: "cpu", Engine: lanes.Local, Model: model}); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range m.Lanes() {
		select {
		case <-l.Settled():
		case <-time.After(2 * time.Minute):
			t.Fatalf("lane %s did not settle: %+v", l.Name(), l.Status())
		}
		if st := l.Status(); st.State != lanes.Serving {
			t.Fatalf("lane %s: %+v", l.Name(), st)
		}
	}
	loaded := func() bool {
		cm, err := a.svc.Model(model)
		return err == nil && cm.Loaded()
	}
	if err := m.Remove(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	if !loaded() {
		t.Fatal("removing lane one unloaded the model lane two serves")
	}
	if err := m.Remove(ctx, "two"); err != nil {
		t.Fatal(err)
	}
	if loaded() {
		t.Fatal("the model stayed loaded after its last lane went")
	}
}
