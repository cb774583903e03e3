package tray

import (
	"errors"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"
)

func newTestApp(t *testing.T) (*App, *fakeController) {
	t.Helper()
	a := test.NewTempApp(t)
	f := newFake()
	var app *App
	uiMu.Lock() // other tests' apps may still be redrawing: fyne's test driver shares font caches
	app = New(a, f, Icons{}, nil)
	app.Window().Resize(fyne.NewSize(860, 620))
	uiMu.Unlock()
	t.Cleanup(app.stop) // no goroutine of this app redraws during the next test
	return app, f
}

// ui runs fn as the UI thread would: one update at a time with the app's own (App.do).
func ui(app *App, fn func()) {
	uiMu.Lock()
	defer uiMu.Unlock()
	fn()
}

// eventually polls cond on the UI's state (no timing is asserted).
func eventually(t *testing.T, app *App, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok := false
		ui(app, func() { ok = cond() })
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestModelsTabLoadUnload(t *testing.T) {
	app, _ := newTestApp(t)
	row := app.models.rows["stories260K"]
	if row == nil || row.state.Text != "Unloaded" || row.load.Disabled() || !row.unload.Disabled() {
		t.Fatalf("row before load: %+v", row)
	}
	if !strings.Contains(row.details.Text, "F32") || !strings.Contains(row.details.Text, "context 2048") || !strings.Contains(row.details.Text, "RAM") {
		t.Fatalf("details %q", row.details.Text)
	}
	ui(app, func() { test.Tap(row.load) })
	eventually(t, app, "the row says loaded", func() bool {
		r := app.models.rows["stories260K"]
		return r.state.Text == "Loaded" && r.load.Disabled() && !r.unload.Disabled()
	})
	ui(app, func() { test.Tap(app.models.rows["stories260K"].unload) })
	eventually(t, app, "the row says unloaded", func() bool { return app.models.rows["stories260K"].state.Text == "Unloaded" })
	// The tray menu follows: with nothing loaded it says so.
	items := MenuItems(app.c.Server(), app.c.Models())
	if find(items, "No model loaded") == nil {
		t.Fatalf("tray menu %v", labels(items))
	}
}

func TestModelsTabDownloadProgress(t *testing.T) {
	app, f := newTestApp(t)
	ui(app, func() { test.Type(app.models.ref, "hf.co/owner/new-GGUF:Q4_K_M") })
	ui(app, func() { test.Tap(app.models.download) })
	seen := map[float64]bool{}
	eventually(t, app, "the download finishes", func() bool {
		seen[app.models.bar.Value] = true
		return strings.HasPrefix(app.models.progress.Text, "Downloaded") && app.models.rows["hf.co/owner/new-GGUF:Q4_K_M"] != nil
	})
	if len(seen) < 3 {
		t.Fatalf("the progress bar took %d values; want it to move", len(seen))
	}
	if app.models.rows["hf.co/owner/new-GGUF:Q4_K_M"] == nil {
		t.Fatal("the downloaded model is not listed")
	}
	// Cancel, then start again.
	ui(app, func() { test.Type(app.models.ref, "hf.co/owner/other-GGUF:Q4_K_M") })
	ui(app, func() { test.Tap(app.models.download) })
	eventually(t, app, "progress shows", func() bool { return app.models.bar.Value > 0 && app.models.pulling != nil })
	ui(app, func() { test.Tap(app.models.cancel) })
	eventually(t, app, "cancelled", func() bool { return strings.HasPrefix(app.models.progress.Text, "Cancelled") })
	if app.models.download.Disabled() {
		t.Fatal("Download stays disabled after a cancel")
	}
	ui(app, func() { test.Tap(app.models.download) })
	eventually(t, app, "the second try finishes", func() bool { return strings.HasPrefix(app.models.progress.Text, "Downloaded") })
	if f.pulls != 3 {
		t.Fatalf("pulls = %d", f.pulls)
	}
}

func TestPlaygroundStreams(t *testing.T) {
	app, f := newTestApp(t)
	f.gate = make(chan struct{})
	ui(app, func() { app.Show("playground") })
	if app.playground.model.Selected == "" {
		t.Fatal("no model chosen")
	}
	ui(app, func() { test.Type(app.playground.input, "Tell me a story") })
	ui(app, func() { test.Tap(app.playground.send) })
	eventually(t, app, "the first words show while the reply streams", func() bool {
		return strings.Contains(app.playground.transcriptText(), "Once ") && strings.HasSuffix(strings.TrimSpace(app.playground.transcriptText()), "▌")
	})
	if app.playground.stop.Disabled() || !app.playground.send.Disabled() {
		t.Fatal("Stop must be enabled and Send disabled while streaming")
	}
	close(f.gate)
	eventually(t, app, "the reply completes", func() bool { return strings.Contains(app.playground.stats.Text, "tokens/s") })
	text := app.playground.transcriptText()
	if !strings.Contains(text, "You\nTell me a story") || !strings.Contains(text, "there was a fox.") || strings.Contains(text, "▌") {
		t.Fatalf("transcript %q", text)
	}
	if !strings.Contains(app.playground.stats.Text, "4 of 12 prompt tokens cached") {
		t.Fatalf("stats %q", app.playground.stats.Text)
	}
	// Stop during a second reply.
	f.gate = make(chan struct{})
	ui(app, func() { test.Type(app.playground.input, "Another") })
	ui(app, func() { test.Tap(app.playground.send) })
	eventually(t, app, "streaming", func() bool {
		return !app.playground.stop.Disabled() && app.playground.reply != nil && app.playground.reply.Len() > 0
	})
	ui(app, func() { test.Tap(app.playground.stop) })
	eventually(t, app, "stopped", func() bool { return app.playground.stats.Text == "Stopped." })
	if len(app.playground.history) != 4 { // question, answer, question, the partial second answer
		t.Fatalf("history %+v", app.playground.history)
	}
	// Bad settings are named, not sent.
	ui(app, func() { app.playground.temperature.SetText("hot") })
	ui(app, func() { test.Type(app.playground.input, "x") })
	ui(app, func() { test.Tap(app.playground.send) })
	if !strings.Contains(app.playground.stats.Text, "temperature") {
		t.Fatalf("stats %q", app.playground.stats.Text)
	}
}

func TestServerTabStartStop(t *testing.T) {
	app, f := newTestApp(t)
	if app.server.status.Text != "Running on 127.0.0.1:8453" || app.server.url.Text != "http://127.0.0.1:8453/v1" {
		t.Fatalf("status %q url %q", app.server.status.Text, app.server.url.Text)
	}
	ui(app, func() { test.Tap(app.server.stop) })
	eventually(t, app, "stopped", func() bool { return app.server.status.Text == "Stopped" && !app.server.start.Disabled() })
	ui(app, func() { test.Tap(app.server.start) })
	eventually(t, app, "running", func() bool { return strings.HasPrefix(app.server.status.Text, "Running") })
	f.mu.Lock()
	f.status = ServerStatus{Address: "127.0.0.1:8453", Err: "port 8453 is in use; set another port"}
	f.mu.Unlock()
	// The test driver runs fyne.Do at once on the caller's goroutine, so a refresh still in flight
	// from Start may land after this one: wait for the state to settle.
	eventually(t, app, "the error shows", func() bool {
		app.refresh() // eventually holds the UI lock
		return strings.Contains(app.server.status.Text, "in use") && (app.icon == IconError || !app.hasTray)
	})
}

func TestQuitStopsTheServer(t *testing.T) {
	app, f := newTestApp(t)
	ui(app, func() { app.Quit() })
	if f.stopped != 1 {
		t.Fatalf("server stopped %d times", f.stopped)
	}
}

func TestServerTabPortAndActivity(t *testing.T) {
	app, f := newTestApp(t)
	f.mu.Lock()
	f.status = ServerStatus{Address: "127.0.0.1:8453", Err: "127.0.0.1:8453 is in use by another program"}
	f.mu.Unlock()
	ui(app, func() { app.refresh() })
	ui(app, func() { app.Show("server") })
	if app.server.port.Text != "8453" {
		t.Fatalf("port field %q", app.server.port.Text)
	}
	ui(app, func() { app.server.port.SetText("70000") })
	var verr error
	ui(app, func() { verr = app.server.port.Validate() })
	if verr == nil {
		t.Fatal("port 70000 accepted")
	}
	ui(app, func() { app.server.host.SetText("0.0.0.0") })
	if !strings.Contains(app.server.exposed.Text, "Other machines") {
		t.Fatalf("no warning for a non-loopback bind: %q", app.server.exposed.Text)
	}
	ui(app, func() { app.server.host.SetText("not an address") })
	ui(app, func() { verr = app.server.host.Validate() })
	if verr == nil {
		t.Fatal("a bad bind address accepted")
	}
	ui(app, func() { app.server.host.SetText("127.0.0.1") })
	ui(app, func() { app.server.port.SetText("18999") })
	ui(app, func() { app.server.changePort() })
	eventually(t, app, "running on the new port", func() bool { return app.server.status.Text == "Running on 127.0.0.1:18999" })
	eventually(t, app, "the lanes and the request log show", func() bool {
		return app.server.lanes.Text == "stories260K: 1 lanes, 1 busy, 40 tokens cached" && len(app.server.log) == 1
	})
	if got := app.server.cell(widget.TableCellID{Row: 1, Col: 6}); got != "24" {
		t.Fatalf("reply tokens cell %q", got)
	}
	ui(app, func() { test.Tap(app.server.hidden) })
	if !f.hidden {
		t.Fatal("the start-hidden setting was not stored")
	}
}

func TestPlaygroundSavesAndReopens(t *testing.T) {
	app, f := newTestApp(t)
	ui(app, func() { app.Show("playground") })
	ui(app, func() { app.playground.system.SetText("Be brief.") })
	ui(app, func() { test.Type(app.playground.input, "First question") })
	ui(app, func() { test.Tap(app.playground.send) })
	eventually(t, app, "the reply completes", func() bool { return strings.Contains(app.playground.stats.Text, "tokens/s") })
	ui(app, func() { test.Type(app.playground.input, "Second question") })
	ui(app, func() { test.Tap(app.playground.send) })
	eventually(t, app, "the second reply completes", func() bool { return len(app.playground.history) == 4 && app.playground.cancel == nil })
	if len(f.convs) != 1 || len(f.convs[0].Messages) != 4 || f.convs[0].Title != "First question" || f.convs[0].System != "Be brief." {
		t.Fatalf("saved %+v", f.convs)
	}
	first := app.playground.convID
	ui(app, func() { test.Tap(app.playground.clear) })
	ui(app, func() { test.Type(app.playground.input, "Another chat") })
	ui(app, func() { test.Tap(app.playground.send) })
	eventually(t, app, "the new chat's reply", func() bool { return len(f.Conversations()) == 2 && app.playground.cancel == nil })
	if len(app.playground.saved.Options) != 2 {
		t.Fatalf("saved list %v", app.playground.saved.Options)
	}
	// Reopen the first one from the list and continue it.
	for label, id := range app.playground.savedID {
		if id == first {
			ui(app, func() { app.playground.saved.SetSelected(label) })
		}
	}
	if app.playground.convID != first || len(app.playground.history) != 4 || app.playground.system.Text != "Be brief." ||
		!strings.Contains(app.playground.transcriptText(), "Second question") {
		t.Fatalf("reopened: id %s history %+v", app.playground.convID, app.playground.history)
	}
}

func TestModelSettingsDialog(t *testing.T) {
	app, f := newTestApp(t)
	ui(app, func() { test.Tap(app.models.rows["stories260K"].settings) })
	form := app.models.settings
	if form == nil {
		t.Fatal("no settings dialog")
	}
	if !strings.Contains(form.memory.Text, "108 MB") { // 100 MB + 2048 × 4 × 1 kB
		t.Fatalf("memory before edits: %q", form.memory.Text)
	}
	ui(app, func() { form.ctx.SetText("100000") })
	ui(app, func() { form.lanes.SetText("8") })
	if !strings.Contains(form.memory.Text, "900 MB") || !strings.Contains(form.memory.Text, "1.0 GB free") {
		t.Fatalf("memory for 100000 × 8: %q", form.memory.Text)
	}
	ui(app, func() { form.ctx.SetText("8192") })
	ui(app, func() { form.lanes.SetText("2") })
	ui(app, func() { form.temperature.SetText("0.2") })
	ui(app, func() { form.system.SetText("Be brief.") })
	var err error
	ui(app, func() { err = form.save() })
	if err != nil {
		t.Fatal(err)
	}
	got := f.settings["stories260K"]
	if got.ContextLength != 8192 || got.Lanes != 2 || got.Temperature != "0.2" || got.SystemPrompt != "Be brief." || got.Runtime != "cpu" {
		t.Fatalf("saved %+v", got)
	}
	ui(app, func() { form.ctx.SetText("-5") })
	ui(app, func() { err = form.save() })
	if err == nil {
		t.Fatal("a negative context was saved")
	}
	ui(app, func() { form.ctx.SetText("") })
	ui(app, func() { form.runtime.SetSelected("vulkan") })
	ui(app, func() { err = form.save() })
	if err == nil || !strings.Contains(err.Error(), "vulkan") {
		t.Fatalf("a runtime that cannot run: %v", err)
	}
}

func TestFaultsShowInTheWindow(t *testing.T) {
	app, f := newTestApp(t)
	// A model file deleted while it is listed.
	f.mu.Lock()
	f.models[0].State, f.models[0].Err = "missing", "open stories260K.gguf: no such file or directory"
	f.mu.Unlock()
	ui(app, func() { app.refresh() })
	row := app.models.rows["stories260K"]
	if row.state.Text != "File missing" || !row.load.Disabled() || row.delete.Disabled() {
		t.Fatalf("missing model row: state %q load disabled %v", row.state.Text, row.load.Disabled())
	}
	if items := MenuItems(f.Server(), f.Models()); !find(items, "Load model").Children[1].Disabled {
		t.Fatal("the tray offers to load a missing model")
	}
	// The worker crashes during a playground reply: the reply shows the error.
	f.chatErr = errors.New("the worker exited during the request (signal: killed); the next request starts a new worker")
	ui(app, func() { app.Show("playground") })
	ui(app, func() { app.playground.model.SetSelected("hf.co/owner/tiny-GGUF:Q8_0") })
	ui(app, func() { test.Type(app.playground.input, "hello") })
	ui(app, func() { test.Tap(app.playground.send) })
	eventually(t, app, "the error shows", func() bool { return strings.HasPrefix(app.playground.stats.Text, "Error: the worker exited") })
	if app.playground.send.Disabled() || !app.playground.stop.Disabled() {
		t.Fatal("after an error Send must work again")
	}
}

func TestQuitWhileStreaming(t *testing.T) {
	app, f := newTestApp(t)
	f.gate = make(chan struct{}) // the reply hangs after its first word
	ui(app, func() { app.Show("playground") })
	ui(app, func() { test.Type(app.playground.input, "Tell me a story") })
	ui(app, func() { test.Tap(app.playground.send) })
	eventually(t, app, "streaming", func() bool { return app.playground.reply != nil && app.playground.reply.Len() > 0 })
	ui(app, func() { app.Quit() })
	if f.stopped != 1 {
		t.Fatalf("server stopped %d times", f.stopped)
	}
}

// TestPlaygroundShowsThinking: a thinking model's reasoning streams folded, in its own muted text
// above the answer, and stays with the turn.
func TestPlaygroundShowsThinking(t *testing.T) {
	app, f := newTestApp(t)
	f.thinking = "The user wants a story about a fox."
	ui(app, func() { app.Show("playground") })
	ui(app, func() { test.Type(app.playground.input, "Tell me a story") })
	ui(app, func() { test.Tap(app.playground.send) })
	eventually(t, app, "the reply completes", func() bool { return strings.Contains(app.playground.stats.Text, "tokens/s") })
	text := app.playground.transcriptText()
	thought := strings.Index(text, "The user wants a story about a fox.")
	answer := strings.Index(text, "Once upon a time there was a fox.")
	if thought < 0 || answer < thought {
		t.Fatalf("transcript %q", text)
	}
	if h := app.playground.history; len(h) != 2 || h[1].Reasoning != f.thinking || h[1].Content != "Once upon a time there was a fox." {
		t.Fatalf("history %+v", h)
	}
	// Set apart: folded under its own title, closed, above the answer.
	rows := app.playground.rows
	if th := rows[len(rows)-1].thought; th == nil || th.Items[0].Open || th.Items[0].Title != "Thought for 8 tokens" {
		t.Errorf("the reasoning should be folded, closed, with its length: %+v", th)
	}
}
