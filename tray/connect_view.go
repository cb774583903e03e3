package tray

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/superfluid/superfluid/tray/connect"
)

// connectView is the Connect tab ("Connect your apps"): for the server's address, a key the
// user pastes and a model picked from the catalog, each app's setup with a Copy button. The
// snippets come from tray/connect, so what is shown is what its tests parse and run.
type connectView struct {
	app     *App
	status  *widget.Label // the address, or that the server is stopped
	key     *widget.Entry
	model   *widget.Select
	list    *fyne.Container
	cards   map[string]*connectCard // by snippet id
	content fyne.CanvasObject
	// keyed is whether keys were required at the last refresh: the key field is prefilled with
	// connect.Placeholder once they become so, and cleared once they stop.
	keyed bool
	// chosen is the model the user picked (""; none yet): refresh keeps it while it is in the
	// catalog, else it picks the loaded model, so the snippets follow what is loaded.
	chosen  string
	picking bool // refresh is setting the model, not the user
}

// connectCard is one app's setup.
type connectCard struct {
	snippet connect.Snippet
	title   *widget.Label
	note    *widget.Label
	// text is a TextGrid, not a monospace Label: a Label's lines clip the underscores of
	// ANTHROPIC_BASE_URL and the like, which then read as spaces.
	text *widget.TextGrid
	copy *widget.Button
	box  fyne.CanvasObject
}

func newConnectView(a *App) *connectView {
	v := &connectView{app: a, status: widget.NewLabel(""), list: container.NewVBox(), cards: map[string]*connectCard{}}
	v.status.Wrapping = fyne.TextWrapWord
	v.key = widget.NewEntry()
	v.key.SetPlaceHolder("no key needed (paste one if the server asks for keys)")
	v.key.OnChanged = func(string) { v.render() }
	v.model = widget.NewSelect(nil, func(id string) {
		if !v.picking {
			v.chosen = id
		}
		v.render()
	})
	v.model.PlaceHolder = "no model in the catalog"
	form := widget.NewForm(
		widget.NewFormItem("API key", v.key),
		widget.NewFormItem("Model", v.model),
	)
	top := container.NewVBox(
		widget.NewLabelWithStyle("Connect your apps", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		v.status, form, widget.NewSeparator(),
	)
	v.content = container.NewBorder(top, nil, nil, nil, container.NewVScroll(v.list))
	return v
}

// refresh rereads the server, the keys and the catalog, then redraws the snippets.
func (v *connectView) refresh() {
	st, models := v.app.c.Server(), v.app.c.Models()
	keys, err := v.app.c.Keys()
	keyed := err == nil && len(keys) > 0
	switch {
	case keyed && !v.keyed && v.key.Text == "":
		v.key.SetText(connect.Placeholder)
	case !keyed && v.keyed && v.key.Text == connect.Placeholder:
		v.key.SetText("")
	}
	v.keyed = keyed
	v.status.SetText(connectStatus(st, keyed))
	ids := connectModels(models)
	v.model.SetOptions(ids)
	want := v.chosen
	if !connectHas(ids, want) && len(ids) > 0 {
		want = ids[0]
	}
	if want != v.model.Selected {
		v.picking = true
		v.model.SetSelected(want) // renders
		v.picking = false
		return
	}
	v.render()
}

// connectStatus says where apps reach the server, and whether they can now.
func connectStatus(st ServerStatus, keyed bool) string {
	root := connect.Root(st.Address)
	var s string
	if st.Running {
		s = "Apps on this machine reach superfluid at " + root + "."
	} else {
		s = "The server is stopped: start it (Server tab or tray menu) before these work. It will listen at " + root + "."
		if st.Err != "" {
			s = "The server is stopped (" + st.Err + "): start it before these work. It would listen at " + root + "."
		}
	}
	if connect.Wildcard(st.Address) {
		s += " It listens on every address: other machines use this machine's own address instead."
	}
	if keyed {
		s += " Keys are required: paste one from the Keys tab (it is shown only when created), or export " + connect.KeyVar + "."
	}
	return s
}

// connectModels are the catalog's ids, the loaded ones first.
func connectModels(models []Model) []string {
	var loaded, rest []string
	for _, m := range models {
		if m.Loaded() {
			loaded = append(loaded, m.ID)
		} else if m.State != "missing" {
			rest = append(rest, m.ID)
		}
	}
	return append(loaded, rest...)
}

func connectHas(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// render redraws every snippet for the address, key and model now chosen, reusing the cards
// so that the list does not jump while the user types a key.
func (v *connectView) render() {
	p := connect.Params{Address: v.app.c.Server().Address, Key: v.key.Text, Model: v.model.Selected}
	snippets := connect.Snippets(p)
	var boxes []fyne.CanvasObject
	seen := map[string]bool{}
	for _, s := range snippets {
		c := v.cards[s.ID]
		if c == nil {
			c = v.newCard()
			v.cards[s.ID] = c
		}
		c.snippet = s
		c.title.SetText(s.Title)
		c.note.SetText(s.Note)
		c.text.SetText(s.Text)
		boxes = append(boxes, c.box)
		seen[s.ID] = true
	}
	for id := range v.cards {
		if !seen[id] {
			delete(v.cards, id)
		}
	}
	v.list.Objects = boxes
	v.list.Refresh()
}

func (v *connectView) newCard() *connectCard {
	c := &connectCard{
		title: widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		note:  widget.NewLabel(""),
		text:  widget.NewTextGrid(),
	}
	c.note.Wrapping = fyne.TextWrapWord
	c.copy = widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), func() {
		v.app.fyne.Clipboard().SetContent(c.snippet.Text)
	})
	head := container.NewBorder(nil, nil, nil, c.copy, c.title)
	c.box = container.NewVBox(head, c.note, container.NewHScroll(c.text), widget.NewSeparator())
	return c
}
