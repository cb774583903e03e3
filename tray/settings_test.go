package tray

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"
)

// TestContextFieldForAgents: the settings dialog's context field says what the model loads
// with when it is empty and what a coding agent needs (a ~20k-token first prompt, refused on a
// smaller window); typing a window that fits changes the hint, and saving stores it, so one
// field raises the window.
func TestContextFieldForAgents(t *testing.T) {
	app, f := newTestApp(t)
	f.mu.Lock()
	if f.settings == nil {
		f.settings = map[string]ModelSettings{}
	}
	f.settings["stories260K"] = ModelSettings{DefaultContext: 4096, TrainContext: 65536}
	f.mu.Unlock()
	ui(app, func() { test.Tap(app.models.rows["stories260K"].settings) })
	form := app.models.settings
	if form == nil {
		t.Fatal("no settings dialog")
	}
	if form.ctx.PlaceHolder != "server default: 4096 tokens" {
		t.Errorf("placeholder %q", form.ctx.PlaceHolder)
	}
	if h := form.ctxHint.Text; !strings.Contains(h, "Claude Code") || !strings.Contains(h, "use 32768 or more") || !strings.Contains(h, "Trained for 65536") {
		t.Errorf("hint with the default window: %q", h)
	}
	ui(app, func() { form.ctx.SetText("32768") })
	if h := form.ctxHint.Text; !strings.Contains(h, "32768 tokens fit a coding agent's prompt") || !strings.Contains(h, "Trained for 65536") {
		t.Errorf("hint for 32768: %q", h)
	}
	var err error
	ui(app, func() { err = form.save() })
	if err != nil {
		t.Fatal(err)
	}
	if got := f.settings["stories260K"]; got.ContextLength != 32768 {
		t.Fatalf("saved %+v", got)
	}
	ui(app, func() { form.ctx.SetText("8192") })
	if h := form.ctxHint.Text; !strings.Contains(h, "use 32768 or more") {
		t.Errorf("hint for 8192: %q", h)
	}
}

// TestContextHintSmallModel: a model trained for fewer tokens than an agent needs is not told
// to use a window past what it was trained for.
func TestContextHintSmallModel(t *testing.T) {
	h := contextHint(ModelSettings{DefaultContext: 2048, TrainContext: 2048})
	if strings.Contains(h, "use 32768 or more") || !strings.Contains(h, "Trained for 2048 tokens only") {
		t.Errorf("hint for a model trained for 2048: %q", h)
	}
	if h := contextHint(ModelSettings{DefaultContext: 4096}); !strings.Contains(h, "use 32768 or more") {
		t.Errorf("hint when the trained window is unknown: %q", h)
	}
}
