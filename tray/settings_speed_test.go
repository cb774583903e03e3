package tray

import (
	"testing"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"
)

// TestSpeedSettingsForm: the settings dialog shows a model's speculation, draft model and
// attention settings and saves what is typed; the defaults save as "" (the server's choice).
func TestSpeedSettingsForm(t *testing.T) {
	app, f := newTestApp(t)
	f.mu.Lock()
	if f.settings == nil {
		f.settings = map[string]ModelSettings{}
	}
	f.settings["stories260K"] = ModelSettings{Speculative: "draft", DraftModel: "tiny-draft", DraftTokens: 6, FlashAttention: "on"}
	f.mu.Unlock()
	ui(app, func() { test.Tap(app.models.rows["stories260K"].settings) })
	form := app.models.settings
	if form == nil {
		t.Fatal("no settings dialog")
	}
	if form.speculative.Selected != "draft" || form.draftModel.Text != "tiny-draft" || form.draftTokens.Text != "6" || form.flash.Selected != "on" {
		t.Fatalf("shown: %q %q %q %q", form.speculative.Selected, form.draftModel.Text, form.draftTokens.Text, form.flash.Selected)
	}
	ui(app, func() {
		form.speculative.SetSelected("ngram")
		form.draftModel.SetText(" ")
		form.draftTokens.SetText("12")
		form.flash.SetSelected("off")
	})
	var err error
	ui(app, func() { err = form.save() })
	if err != nil {
		t.Fatal(err)
	}
	if got := f.settings["stories260K"]; got.Speculative != "ngram" || got.DraftModel != "" || got.DraftTokens != 12 || got.FlashAttention != "off" {
		t.Fatalf("saved %+v", got)
	}
	ui(app, func() {
		form.speculative.SetSelected(serverDefault)
		form.flash.SetSelected("auto")
		form.draftTokens.SetText("")
	})
	ui(app, func() { err = form.save() })
	if got := f.settings["stories260K"]; err != nil || got.Speculative != "" || got.FlashAttention != "" || got.DraftTokens != 0 {
		t.Fatalf("defaults saved as %+v (%v)", got, err)
	}
	ui(app, func() { form.draftTokens.SetText("many") })
	if err := func() error { ui(app, func() { err = form.save() }); return err }(); err == nil {
		t.Fatal("draft tokens \"many\" saved")
	}
}

// TestRequestLogSpeedColumns: the server tab's request log shows what speculative decoding
// drafted and kept, and why the prompt missed the cache.
func TestRequestLogSpeedColumns(t *testing.T) {
	v := &serverView{log: []Request{
		{Model: "m", FinishReason: "stop", SpecProposed: 60, SpecAccepted: 38, CacheMiss: "diverged at token 12"},
		{Model: "m", FinishReason: "stop"},
	}}
	for _, c := range []struct {
		row, col int
		want     string
	}{{0, 9, "Drafted/kept"}, {0, 10, "Cache miss"}, {1, 8, "stop"}, {1, 9, "60 / 38"}, {1, 10, "diverged at token 12"}, {2, 9, "—"}, {2, 10, ""}} {
		if got := v.cell(widget.TableCellID{Row: c.row, Col: c.col}); got != c.want {
			t.Errorf("cell %d,%d = %q, want %q", c.row, c.col, got, c.want)
		}
	}
	if len(requestColumns) != len(requestColumnWidths) {
		t.Errorf("%d columns, %d widths", len(requestColumns), len(requestColumnWidths))
	}
}
