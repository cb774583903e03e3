package tray

import (
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"
)

// TestKeysTab: a key is created from the form and shown once in a dialog whose Copy button
// puts it on the clipboard; the list shows it (never the key itself) and Revoke, after a
// confirmation, removes it. Keys from the command line cannot be revoked here.
func TestKeysTab(t *testing.T) {
	app, f := newTestApp(t)
	v := app.keys
	ui(app, func() { app.Show("keys") })
	if app.tabs.Selected() != app.keysTab || !strings.Contains(v.status.Text, "No API keys") || len(v.rows) != 0 {
		t.Fatalf("empty keys tab: %q, %d rows", v.status.Text, len(v.rows))
	}

	ui(app, func() {
		test.Type(v.name, "laptop")
		v.admin.SetChecked(true)
		test.Type(v.models, "stories260K, other ,")
		test.Tap(v.create)
	})
	ck := v.created
	if ck == nil || ck.key != "sk-sf-fake-1" || ck.text.Text != ck.key {
		t.Fatalf("the new key is not shown: %+v", ck)
	}
	if top := app.win.Canvas().Overlays().Top(); top == nil || findButton(top, "Copy") != ck.copy {
		t.Fatal("no dialog with the key's Copy button")
	}
	ui(app, func() { test.Tap(ck.copy) })
	if got := app.fyne.Clipboard().Content(); got != "sk-sf-fake-1" || ck.copy.Text != "Copied" {
		t.Fatalf("clipboard %q, button %q", got, ck.copy.Text)
	}
	ui(app, func() { test.Tap(findButton(app.win.Canvas().Overlays().Top(), "Done")) })
	if app.win.Canvas().Overlays().Top() != nil {
		t.Fatal("Done left the dialog open")
	}
	if got := f.keys[0]; got.Name != "laptop" || !got.Admin || !slices.Equal(got.Models, []string{"stories260K", "other"}) {
		t.Fatalf("created %+v", got)
	}
	row := v.rows["key-1"]
	if row == nil || !strings.Contains(row.label.Text, "laptop") || !strings.Contains(row.label.Text, "admin") ||
		!strings.Contains(row.label.Text, "sk-sf-fake…") || strings.Contains(row.label.Text, ck.key) || row.revoke.Disabled() {
		t.Fatalf("row %+v", row)
	}
	if v.name.Text != "" || v.models.Text != "" || v.admin.Checked || !strings.Contains(v.status.Text, "1 key.") {
		t.Fatalf("form after create: %q %q %v; status %q", v.name.Text, v.models.Text, v.admin.Checked, v.status.Text)
	}

	// A taken name and an empty one are refused with the reason in a dialog.
	for _, name := range []string{"laptop", " "} {
		ui(app, func() {
			v.name.SetText(name)
			test.Tap(v.create)
		})
		top := app.win.Canvas().Overlays().Top()
		if top == nil || len(f.keys) != 1 || v.created != ck {
			t.Fatalf("name %q: created %d keys", name, len(f.keys))
		}
		ui(app, func() { app.win.Canvas().Overlays().Remove(top) })
	}

	// Revoke asks first.
	ui(app, func() { test.Tap(row.revoke) })
	confirm := findButton(app.win.Canvas().Overlays().Top(), "Revoke")
	if confirm == nil || len(f.keys) != 1 {
		t.Fatal("no confirmation before revoking")
	}
	ui(app, func() { test.Tap(confirm) })
	if len(f.keys) != 0 || len(v.rows) != 0 || !strings.Contains(v.status.Text, "No API keys") {
		t.Fatalf("after revoke: %d keys, %d rows", len(f.keys), len(v.rows))
	}

	// A key from --key-policy is listed, not revocable here; the tab rereads the keys when shown.
	f.mu.Lock()
	f.keys = append(f.keys, APIKey{ID: "policy:ci", Name: "ci", Source: "policy", Models: []string{"m"}})
	f.mu.Unlock()
	ui(app, func() { app.Show("models") })
	ui(app, func() { app.Show("keys") })
	if r := v.rows["policy:ci"]; r == nil || !r.revoke.Disabled() || !strings.Contains(r.label.Text, "from --key-policy") {
		t.Fatalf("policy key row %+v", r)
	}
}
