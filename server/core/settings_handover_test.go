package core_test

import (
	"context"
	"testing"

	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/store"
)

// TestSettingsHandedOverAtStart: settings take one road, store → core → manager. A core
// opened over a store that has a model's settings hands them to its manager before any load
// (the manager never asks), and deleting the model forgets them there too.
func TestSettingsHandedOverAtStart(t *testing.T) {
	ctx := context.Background()
	cat := servertest.NewCatalog(t, models.Config{})
	cat.AddModel(t, "m", gguftest.TinyLlamaOptions{})
	if err := cat.Svc.SetModelSettings(ctx, store.ModelSettings{ModelID: "m", ContextLength: 1024, Lanes: 1}); err != nil {
		t.Fatal(err)
	}
	if got := cat.Mgr.Settings("m"); got.ContextLength != 1024 || got.Lanes != 1 {
		t.Fatalf("the manager holds %+v after a change", got)
	}

	// The next start: a new catalog, manager and core over the same store.
	again, err := models.OpenCatalog(ctx, cat.Store, cat.Mgr.Catalog().Dir())
	if err != nil {
		t.Fatal(err)
	}
	mgr := models.NewManager(again, models.Config{MemoryBudget: 1 << 40,
		NewRunner: func(*models.Entry, bool) models.Runner { return &servertest.Runner{Engine: enginetest.New(512, "hi")} }})
	t.Cleanup(func() { mgr.Close() })
	svc := core.NewCatalog(core.Config{}, cat.Store, mgr, nil)
	if got := mgr.Settings("m"); got.ContextLength != 1024 || got.Lanes != 1 {
		t.Fatalf("at start the manager holds %+v, want the stored settings", got)
	}
	m, err := svc.Model("m")
	if err != nil {
		t.Fatal(err)
	}
	if info := m.Info(); info.ContextLength != 1024 || info.Parallel != 1 {
		t.Fatalf("before its first load the model reports %+v", info)
	}
	if _, err := svc.DeleteModel(ctx, "m"); err != nil {
		t.Fatal(err)
	}
	if got := mgr.Settings("m"); got != (models.Settings{}) {
		t.Fatalf("a deleted model's settings stay in the manager: %+v", got)
	}
}

// TestSettingsHandedOverForALateModel: a model that joins the catalog after the core started
// (another process sharing the data folder pulled it and stored its settings; the catalog
// picks up its row) loads with its stored settings, as its requests already get its system
// prompt: the core hands them over when it first meets the model, before the manager is asked
// for its window.
func TestSettingsHandedOverForALateModel(t *testing.T) {
	ctx := context.Background()
	cat := servertest.NewCatalog(t, models.Config{})
	// As another process would: the settings row is written behind this core's back, then the
	// model registered.
	if err := cat.Store.PutModelSettings(ctx, store.ModelSettings{ModelID: "late", ContextLength: 1024, Lanes: 1, SystemPrompt: "Be brief."}); err != nil {
		t.Fatal(err)
	}
	cat.AddModel(t, "late", gguftest.TinyLlamaOptions{})
	m, err := cat.Svc.Model("late")
	if err != nil {
		t.Fatal(err)
	}
	if set, _ := cat.Svc.ModelSettings(ctx, "late"); set.SystemPrompt != "Be brief." {
		t.Fatalf("the core reads %+v", set)
	}
	if got := cat.Mgr.Settings("late"); got.ContextLength != 1024 || got.Lanes != 1 {
		t.Errorf("the manager holds %+v for a model the core has met, want its stored settings", got)
	}
	if info := m.Info(); info.ContextLength != 1024 || info.Parallel != 1 {
		t.Errorf("the model reports %+v, want the stored window and lanes", info)
	}
}
