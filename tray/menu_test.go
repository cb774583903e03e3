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
	items := TrayMenu(running, models)
	got := strings.Join(labels(items), "|")
	want := "Running on 127.0.0.1:8453|Stop server|---|stories260K|Load model|---|Open window|Open playground|Copy API URL|---|Quit"
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

	stopped := TrayMenu(ServerStatus{Err: "port 8453 is in use"}, nil)
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
		if got := TrayIcon(tt.st, tt.models, tt.gen); got != tt.want {
			t.Errorf("TrayIcon(%+v, %+v, %d) = %v, want %v", tt.st, tt.models, tt.gen, got, tt.want)
		}
	}
}
