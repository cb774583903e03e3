package tray

import (
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// keysView is the Keys tab: the API keys, a form that creates one (shown once, in a dialog
// with a Copy button) and a Revoke button per key.
type keysView struct {
	app     *App
	status  *widget.Label
	list    *fyne.Container
	rows    map[string]*keyRow // by key id
	name    *widget.Entry
	admin   *widget.Check
	models  *widget.Entry
	create  *widget.Button
	created *createdKey // the dialog of the key created last (tests read it)
	content fyne.CanvasObject
}

// keyRow is one key in the list.
type keyRow struct {
	key    APIKey
	label  *widget.Label
	revoke *widget.Button
}

// createdKey is the dialog that shows a new key, once.
type createdKey struct {
	key    string
	text   *widget.Label
	copy   *widget.Button
	dialog dialog.Dialog
}

func newKeysView(a *App) *keysView {
	v := &keysView{app: a, status: widget.NewLabel(""), list: container.NewVBox(), rows: map[string]*keyRow{}}
	v.status.Wrapping = fyne.TextWrapWord
	v.name = widget.NewEntry()
	v.name.SetPlaceHolder("a name, e.g. laptop or ci")
	v.admin = widget.NewCheck("Admin: may also load, unload and delete models and manage keys", nil)
	v.models = widget.NewEntry()
	v.models.SetPlaceHolder("every model (or model ids, comma-separated)")
	v.create = widget.NewButtonWithIcon("Create key", theme.ContentAddIcon(), v.createKey)
	v.name.OnSubmitted = func(string) { v.createKey() }
	form := widget.NewForm(
		widget.NewFormItem("Name", v.name),
		widget.NewFormItem("", v.admin),
		widget.NewFormItem("Models", v.models),
	)
	top := container.NewVBox(
		widget.NewLabelWithStyle("API keys", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		widget.NewSeparator(), v.status,
		widget.NewLabelWithStyle("New key", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		form, container.NewHBox(v.create),
		widget.NewLabelWithStyle("Keys", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
	v.content = container.NewBorder(top, nil, nil, nil, container.NewVScroll(v.list))
	v.refresh()
	return v
}

// refresh lists the keys again.
func (v *keysView) refresh() {
	keys, err := v.app.c.Keys()
	if err != nil {
		v.status.SetText("The keys cannot be read: " + err.Error())
		return
	}
	if len(keys) == 0 {
		v.status.SetText("No API keys: apps on this machine use the server without one, and it cannot listen on the network. " +
			"Once a key exists, every request (but /health) must send one: Authorization: Bearer KEY, or x-api-key: KEY.")
	} else {
		v.status.SetText(fmt.Sprintf("%d %s. Every request (but /health) must send one: Authorization: Bearer KEY, or x-api-key: KEY.",
			len(keys), map[bool]string{true: "key", false: "keys"}[len(keys) == 1]))
	}
	v.rows = map[string]*keyRow{}
	v.list.RemoveAll()
	for _, k := range keys {
		row := &keyRow{key: k, label: widget.NewLabel(keyLine(k))}
		row.label.Wrapping = fyne.TextWrapWord
		k := k
		row.revoke = widget.NewButtonWithIcon("Revoke", theme.DeleteIcon(), func() { v.confirmRevoke(k) })
		if k.Source != "store" {
			row.revoke.Disable() // configured on the command line: removed there
		}
		v.rows[k.ID] = row
		v.list.Add(container.NewBorder(nil, nil, nil, row.revoke, row.label))
	}
	v.list.Refresh()
}

// keyLine describes a key on one line.
func keyLine(k APIKey) string {
	parts := []string{k.Name}
	switch {
	case k.Prefix != "":
		parts = append(parts, k.Prefix+"…")
	case k.Source == "policy":
		parts = append(parts, "from --key-policy")
	default:
		parts = append(parts, "from --api-key")
	}
	if k.Admin {
		parts = append(parts, "admin")
	}
	if len(k.Models) > 0 {
		parts = append(parts, "models: "+strings.Join(k.Models, ", "))
	} else {
		parts = append(parts, "every model")
	}
	if k.Created != "" {
		parts = append(parts, "created "+k.Created)
	}
	return strings.Join(parts, " · ")
}

// createKey makes a key from the form and shows it once.
func (v *keysView) createKey() {
	name := strings.TrimSpace(v.name.Text)
	if name == "" {
		v.app.showError(fmt.Errorf("name the key first (letters, digits, '.', '_', '-' or '@')"))
		return
	}
	var models []string
	for _, m := range strings.Split(v.models.Text, ",") {
		if m = strings.TrimSpace(m); m != "" {
			models = append(models, m)
		}
	}
	key, err := v.app.c.CreateKey(NewAPIKey{Name: name, Admin: v.admin.Checked, Models: models})
	if err != nil {
		v.app.showError(err)
		return
	}
	v.name.SetText("")
	v.models.SetText("")
	v.admin.SetChecked(false)
	v.refresh()
	v.showKey(name, key)
}

// showKey shows a new key with a Copy button: the only time it is shown.
func (v *keysView) showKey(name, key string) {
	ck := &createdKey{key: key, text: widget.NewLabelWithStyle(key, fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})}
	ck.text.Selectable = true
	ck.copy = widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), func() {
		v.app.fyne.Clipboard().SetContent(key)
		ck.copy.SetText("Copied")
	})
	note := widget.NewLabel("Copy the key now: it is not shown again (only its hash is kept). Apps send it as Authorization: Bearer KEY or x-api-key: KEY.")
	note.Wrapping = fyne.TextWrapWord
	content := container.NewVBox(note, container.NewBorder(nil, nil, nil, ck.copy, ck.text))
	ck.dialog = dialog.NewCustom("New API key: "+name, "Done", content, v.app.win)
	ck.dialog.Resize(fyne.NewSize(640, 220))
	v.created = ck
	ck.dialog.Show()
}

// confirmRevoke asks before revoking a key.
func (v *keysView) confirmRevoke(k APIKey) {
	d := dialog.NewConfirm("Revoke "+k.Name+"?", "Apps using this key get 401 from now on. This cannot be undone.", func(ok bool) {
		if ok {
			v.revoke(k.ID)
		}
	}, v.app.win)
	d.SetConfirmText("Revoke")
	d.Show()
}

func (v *keysView) revoke(id string) {
	if err := v.app.c.RevokeKey(id); err != nil {
		v.app.showError(err)
	}
	v.refresh()
}
