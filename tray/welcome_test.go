package tray

import (
	"errors"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"
)

// openWelcome opens the welcome over a fake on a fresh install and waits for its suggestion.
func openWelcome(t *testing.T, first *fakeFirstRun) (*App, *fakeController, *welcomeView) {
	t.Helper()
	app, f := newTestApp(t)
	f.first = first
	ui(app, app.ShowWelcome)
	v := app.welcome
	eventually(t, app, "the suggestion is shown", func() bool { return !strings.HasPrefix(v.suggest.Text, "Looking") })
	return app, f, v
}

// TestWelcomeChatNow: the bundled model is offered; Chat now loads it and opens the playground
// on it, the welcome closed.
func TestWelcomeChatNow(t *testing.T) {
	app, f, v := openWelcome(t, newFakeFirstRun())
	if !strings.Contains(v.chatNote.Text, "stories260K") || v.chat.Disabled() {
		t.Fatalf("bundled model not offered: %q", v.chatNote.Text)
	}
	if top := app.win.Canvas().Overlays().Top(); top == nil || findButton(top, "Chat now") != v.chat {
		t.Fatal("the welcome is not over the window")
	}
	ui(app, func() { test.Tap(v.chat) })
	eventually(t, app, "the playground opens on stories260K", func() bool {
		return app.tabs.Selected() == app.playTab && app.playground.modelID() == "stories260K"
	})
	if m := f.Models()[0]; !m.Loaded() {
		t.Fatalf("bundled model not loaded: %+v", m)
	}
	if app.win.Canvas().Overlays().Top() != nil {
		t.Fatal("the welcome is still open")
	}
}

// TestWelcomeDownload: the suggestion shows its name, size and fit; Download starts it with the
// Models tab's progress and the model arrives in the catalog.
func TestWelcomeDownload(t *testing.T) {
	app, f, v := openWelcome(t, newFakeFirstRun())
	for _, want := range []string{"Qwen3 1.7B", "Q4_K_M", "1.2 GB", "hf.co/unsloth/Qwen3-1.7B-GGUF:Q4_K_M"} {
		if !strings.Contains(v.suggest.Text, want) {
			t.Errorf("suggestion %q lacks %q", v.suggest.Text, want)
		}
	}
	if v.download.Disabled() {
		t.Fatal("Download is disabled")
	}
	ui(app, func() { test.Tap(v.download) })
	if app.tabs.Selected().Text != "Models" {
		t.Fatalf("tab %q, want Models", app.tabs.Selected().Text)
	}
	eventually(t, app, "the download finishes", func() bool {
		return strings.HasPrefix(app.models.progress.Text, "Downloaded hf.co/unsloth/Qwen3-1.7B-GGUF:Q4_K_M")
	})
	if f.pulls != 1 {
		t.Fatalf("%d pulls", f.pulls)
	}
}

// TestWelcomeOffline: offline the welcome says so and offers no download; an error from the
// controller is shown too.
func TestWelcomeOffline(t *testing.T) {
	first := newFakeFirstRun()
	first.suggestion = Suggestion{Note: "Offline: the Hub cannot be reached, so there is no suggestion. stories260K works without it."}
	app, _, v := openWelcome(t, first)
	if !strings.HasPrefix(v.suggest.Text, "Offline") || !v.download.Disabled() {
		t.Fatalf("offline: %q, download disabled %v", v.suggest.Text, v.download.Disabled())
	}
	ui(app, func() { v.showSuggestion(Suggestion{}, errors.New("no memory estimate")) })
	if v.suggest.Text != "No suggestion: no memory estimate" || !v.download.Disabled() {
		t.Fatalf("error: %q", v.suggest.Text)
	}
}

// TestWelcomeMoveModels: Change… moves the models with a progress bar and shows the new folder;
// a move that fails (a full disk) says why and keeps the old folder.
func TestWelcomeMoveModels(t *testing.T) {
	first := newFakeFirstRun()
	first.moveErr = errFakeFull
	app, _, v := openWelcome(t, first)
	old := v.dir.Text
	v.pickDir = func(onPicked func(string)) { onPicked("/mnt/small") }
	ui(app, func() { test.Tap(v.change) })
	eventually(t, app, "the failed move is shown", func() bool { return !v.change.Disabled() && v.moveNote.Text != "" })
	if !strings.Contains(v.moveNote.Text, "Not moved: the disk holding /mnt/small is full") || v.dir.Text != old || v.moveBar.Visible() || !v.moveNote.Visible() {
		t.Fatalf("failed move: note %q, dir %q", v.moveNote.Text, v.dir.Text)
	}

	first.mu.Lock()
	first.moveErr = nil
	first.mu.Unlock()
	v.pickDir = func(onPicked func(string)) { onPicked("/mnt/big/models") }
	ui(app, func() { test.Tap(v.change) })
	eventually(t, app, "the move is done", func() bool { return strings.HasPrefix(v.moveNote.Text, "Moved") })
	if v.dir.Text != "/mnt/big/models" || len(first.moved) != 2 {
		t.Fatalf("dir %q, moves %v", v.dir.Text, first.moved)
	}
}

// TestWelcomeDontShowAgain: Copy puts the API URL on the clipboard; Close keeps the welcome
// for the next start, Don't show again remembers it was seen; the main menu opens it again.
func TestWelcomeDontShowAgain(t *testing.T) {
	app, f, v := openWelcome(t, newFakeFirstRun())
	if v.url.Text != "http://127.0.0.1:8453/v1" {
		t.Fatalf("url %q", v.url.Text)
	}
	ui(app, func() { test.Tap(v.copyURL) })
	if got := app.fyne.Clipboard().Content(); got != "http://127.0.0.1:8453/v1" {
		t.Fatalf("clipboard %q", got)
	}
	ui(app, func() { test.Tap(v.close) })
	if !f.FirstRun() || app.win.Canvas().Overlays().Top() != nil {
		t.Fatal("Close: welcome still open or remembered as seen")
	}
	var welcome func()
	for _, it := range app.win.MainMenu().Items[0].Items {
		if it.Label == "Welcome…" {
			welcome = it.Action
		}
	}
	if welcome == nil {
		t.Fatal("no Welcome… in the main menu")
	}
	ui(app, welcome)
	v = app.welcome
	ui(app, func() { test.Tap(v.dontShow) })
	if f.FirstRun() || app.win.Canvas().Overlays().Top() != nil {
		t.Fatal("Don't show again: still a first run or still open")
	}
}

// TestResumePulls: the downloads left running at the last quit start again, one after
// another, on the Models tab with its progress bar.
func TestResumePulls(t *testing.T) {
	app, f := newTestApp(t)
	first := newFakeFirstRun()
	first.pending = []string{"hf.co/a/one-GGUF:Q4_K_M", "hf.co/b/two-GGUF:Q8_0"}
	f.first = first
	ui(app, app.ResumePulls)
	if !strings.HasPrefix(app.models.progress.Text, "Resuming hf.co/a/one-GGUF:Q4_K_M") || !app.models.bar.Visible() {
		t.Fatalf("first resume: %q", app.models.progress.Text)
	}
	eventually(t, app, "both downloads finish", func() bool {
		return app.models.progress.Text == "Downloaded hf.co/b/two-GGUF:Q8_0."
	})
	ids := map[string]bool{}
	for _, m := range f.Models() {
		ids[m.ID] = true
	}
	if f.pulls != 2 || !ids["hf.co/a/one-GGUF:Q4_K_M"] || !ids["hf.co/b/two-GGUF:Q8_0"] {
		t.Fatalf("%d pulls, models %v", f.pulls, ids)
	}
}
