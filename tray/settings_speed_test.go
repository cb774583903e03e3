package tray

import (
	"testing"

	"fyne.io/fyne/v2/test"
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
