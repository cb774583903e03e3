package tray

import (
	"strings"
	"testing"
)

func labels(items []MenuItem) []string {
	var out []string
	for _, it := range items {
		if it.Separator {
			out = append(out, "---")
			continue
		}
		out = append(out, it.Label)
	}
	return out
}

func find(items []MenuItem, label string) *MenuItem {
	for i := range items {
		if items[i].Label == label {
			return &items[i]
		}
	}
	return nil
}

func TestTrayMenu(t *testing.T) {
	models := []Model{
		{ID: "stories260K", State: "loaded"},
		{ID: "alpha", State: "unloaded"},
		{ID: "gone", State: "missing"},
		{ID: "bad", State: "failed"},
	}
	running := ServerStatus{Running: true, Address: "127.0.0.1:8453"}
	items := MenuItems(running, models)
	got := strings.Join(labels(items), "|")
	want := "Running on 127.0.0.1:8453|Stop server|---|stories260K|Load model|---|Open window|Open playground|Copy API URL|Connect your apps…|---|Quit"
	if got != want {
		t.Fatalf("menu\n got %s\nwant %s", got, want)
	}
	if it := find(items, "stories260K"); it == nil || len(it.Children) != 1 || it.Children[0].Action != ActionUnload || it.Children[0].Arg != "stories260K" {
		t.Fatalf("loaded model entry %+v", it)
	}
	load := find(items, "Load model").Children
	if strings.Join(labels(load), "|") != "alpha|bad (failed)|gone (file missing)|stories260K ✓" {
		t.Fatalf("load submenu %v", labels(load))
	}
	for _, it := range load {
		wantDisabled := it.Arg == "gone" || it.Arg == "stories260K"
		if it.Disabled != wantDisabled || it.Action != ActionLoad {
			t.Errorf("load item %+v", it)
		}
	}

	stopped := MenuItems(ServerStatus{Err: "port 8453 is in use"}, nil)
	if labels(stopped)[0] != "Stopped: port 8453 is in use" || stopped[1].Action != ActionStartServer {
		t.Fatalf("stopped menu %v", labels(stopped))
	}
	if find(stopped, "No model loaded") == nil || find(stopped, "Copy API URL").Disabled != true {
		t.Fatalf("stopped menu %+v", stopped)
	}
	if l := find(stopped, "Load model").Children; len(l) != 1 || !l[0].Disabled {
		t.Fatalf("empty catalog submenu %+v", l)
	}
}

func TestTrayIcon(t *testing.T) {
	ok := ServerStatus{Running: true}
	tests := []struct {
		st     ServerStatus
		models []Model
		gen    int
		want   IconState
	}{
		{ok, nil, 0, IconIdle},
		{ok, []Model{{State: "loaded"}}, 0, IconIdle},
		{ok, []Model{{State: "loading"}}, 0, IconLoading},
		{ok, []Model{{State: "loaded"}}, 2, IconGenerating},
		{ok, []Model{{State: "failed"}}, 2, IconError},
		{ServerStatus{Err: "port in use"}, nil, 0, IconError},
	}
	for _, tt := range tests {
		if got := IconFor(tt.st, tt.models, tt.gen); got != tt.want {
			t.Errorf("IconFor(%+v, %+v, %d) = %v, want %v", tt.st, tt.models, tt.gen, got, tt.want)
		}
	}
}

// TestFyneMenuItems: the plain menu becomes fyne's tray menu item for item, with actions wired.
func TestFyneMenuItems(t *testing.T) {
	app, f := newTestApp(t)
	items := app.fyneItems(MenuItems(f.Server(), f.Models()))
	plain := MenuItems(f.Server(), f.Models())
	if len(items) != len(plain) {
		t.Fatalf("%d fyne items for %d menu items", len(items), len(plain))
	}
	for i, it := range items {
		if plain[i].Separator != it.IsSeparator || (!it.IsSeparator && it.Label != plain[i].Label) || it.Disabled != plain[i].Disabled {
			t.Errorf("item %d: fyne %+v, plain %+v", i, it, plain[i])
		}
		if plain[i].Action != ActionNone && it.Action == nil {
			t.Errorf("item %q has no action", it.Label)
		}
	}
	load := items[len(items)-8] // Load model
	if load.Label != "Load model" || load.ChildMenu == nil || len(load.ChildMenu.Items) != 2 {
		t.Fatalf("load submenu %+v", load)
	}
	if quit := items[len(items)-1]; !quit.IsQuit {
		t.Fatal("Quit is not the quit item")
	}
	// Choosing a model in the submenu loads it.
	ui(app, func() { load.ChildMenu.Items[0].Action() })
	eventually(t, app, "the model loads from the tray", func() bool {
		for _, m := range f.Models() {
			if m.ID == load.ChildMenu.Items[0].Label && m.Loaded() {
				return true
			}
		}
		return false
	})
}
