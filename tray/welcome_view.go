package tray

import (
	"context"
	"fmt"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
	"github.com/dustin/go-humanize"
)

// welcomeView is the first-run welcome: a dialog over the window with the four things a new
// user needs (a model ready to chat, a first download that fits, where models are stored, the
// API URL). It opens once on a fresh install and again from the main menu's Welcome….
type welcomeView struct {
	app *App
	dlg dialog.Dialog

	chat       *widget.Button // loads the bundled model and opens the playground
	chatNote   *widget.Label
	suggest    *widget.Label
	download   *widget.Button
	dir        *widget.Label
	change     *widget.Button
	moveBar    *widget.ProgressBar
	moveNote   *widget.Label
	url        *widget.Label
	copyURL    *widget.Button
	dontShow   *widget.Button
	close      *widget.Button
	suggestion Suggestion
	bundled    string // the bundled model's id; "" when the catalog has none
	// pickDir asks for the new models folder; tests replace the folder dialog with it.
	pickDir func(onPicked func(dir string))
}

// defaultSuggestTimeout bounds the Hub look-up behind the suggestion: offline, the welcome says
// so instead of waiting.
const defaultSuggestTimeout = 15 * time.Second

// ShowWelcome opens the welcome over the window.
func (t *App) ShowWelcome() {
	v := newWelcomeView(t)
	t.welcome = v
	t.win.Show()
	v.dlg.Show()
	go v.loadSuggestion()
}

func newWelcomeView(t *App) *welcomeView {
	v := &welcomeView{app: t}
	v.chatNote = widget.NewLabel("")
	v.chatNote.Wrapping = fyne.TextWrapWord
	v.chat = widget.NewButtonWithIcon("Chat now", theme.MailComposeIcon(), v.startChat)
	for _, m := range t.c.Models() {
		if m.Source == "bundled" {
			v.bundled = m.ID
		}
	}
	if v.bundled == "" {
		v.chatNote.SetText("The bundled model is not in the catalog; download one below.")
		v.chat.Disable()
	} else {
		v.chatNote.SetText(v.bundled + " comes with superfluid and is ready to chat (a tiny model that tells short stories).")
	}

	v.suggest = widget.NewLabel("Looking for a model that fits this machine …")
	v.suggest.Wrapping = fyne.TextWrapWord
	v.download = widget.NewButtonWithIcon("Download", theme.DownloadIcon(), v.startDownload)
	v.download.Disable()

	v.dir = widget.NewLabel(t.c.ModelsDir())
	v.dir.Wrapping = fyne.TextWrapBreak
	v.change = widget.NewButtonWithIcon("Change…", theme.FolderOpenIcon(), v.askDir)
	v.moveBar = widget.NewProgressBar()
	v.moveBar.Hide()
	v.moveNote = widget.NewLabel("")
	v.moveNote.Wrapping = fyne.TextWrapWord
	v.moveNote.Hide() // shown with the move's outcome
	v.pickDir = func(onPicked func(string)) {
		d := dialog.NewFolderOpen(func(u fyne.ListableURI, err error) {
			if err == nil && u != nil {
				onPicked(u.Path())
			}
		}, t.win)
		d.Resize(fyne.NewSize(700, 500))
		d.Show()
	}

	v.url = widget.NewLabel(t.c.APIURL())
	v.copyURL = widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), func() {
		t.copyURL()
		v.copyURL.SetText("Copied")
	})

	v.dontShow = widget.NewButton("Don't show again", func() {
		if err := t.c.SetWelcomed(); err != nil {
			t.showError(err)
			return
		}
		v.dlg.Hide()
	})
	v.close = widget.NewButton("Close", func() { v.dlg.Hide() })
	v.close.Importance = widget.HighImportance

	section := func(title string, body fyne.CanvasObject, button fyne.CanvasObject) fyne.CanvasObject {
		head := widget.NewLabelWithStyle(title, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
		return container.NewVBox(head, container.NewBorder(nil, nil, nil, button, body))
	}
	content := container.NewVBox(
		widget.NewLabel("superfluid runs language models on this computer and serves them to your apps."),
		section("1. Chat right away", v.chatNote, v.chat),
		widget.NewSeparator(),
		section("2. A first download that fits this machine", v.suggest, v.download),
		widget.NewSeparator(),
		section("3. Where models are stored", v.dir, v.change),
		v.moveBar, v.moveNote,
		widget.NewSeparator(),
		section("4. Point your apps at", v.url, v.copyURL),
	)
	d := dialog.NewCustomWithoutButtons("Welcome to superfluid", content, t.win)
	d.SetButtons([]fyne.CanvasObject{v.dontShow, v.close})
	v.dlg = d
	v.dlg.Resize(fyne.NewSize(640, 520))
	return v
}

// loadSuggestion asks the controller for a first download (it may reach the Hub) and shows it.
func (v *welcomeView) loadSuggestion() {
	ctx, cancel := context.WithTimeout(context.Background(), defaultSuggestTimeout)
	defer cancel()
	s, err := v.app.c.Suggestion(ctx)
	v.app.do(func() { v.showSuggestion(s, err) })
}

func (v *welcomeView) showSuggestion(s Suggestion, err error) {
	v.suggestion = s
	switch {
	case err != nil:
		v.suggest.SetText("No suggestion: " + err.Error())
		v.download.Disable()
	case s.Reference == "":
		v.suggest.SetText(s.Note)
		v.download.Disable()
	default:
		v.suggest.SetText(fmt.Sprintf("%s (%s): %s download, needs ≈%s of the %s free here.\n%s",
			s.Name, s.Quant, humanize.Bytes(uint64(s.Size)), humanize.Bytes(uint64(s.Need)), humanize.Bytes(uint64(s.Free)), s.Reference))
		v.download.Enable()
	}
}

// startChat loads the bundled model and opens the playground on it.
func (v *welcomeView) startChat() {
	id := v.bundled
	v.chat.Disable()
	v.chatNote.SetText("Loading " + id + " …")
	go func() {
		err := v.app.c.Load(id)
		v.app.do(func() {
			v.chat.Enable()
			if err != nil {
				v.chatNote.SetText("Could not load " + id + ": " + err.Error())
				return
			}
			v.dlg.Hide()
			v.app.refresh()
			v.app.playground.selectModel(id)
			v.app.Show("playground")
		})
	}()
}

// startDownload pulls the suggestion with the Models tab's download (its progress bar,
// Cancel and resume).
func (v *welcomeView) startDownload() {
	m := v.app.models
	if m.pulling != nil {
		v.suggest.SetText("A download is running; its progress is on the Models tab.")
		return
	}
	m.ref.SetText(v.suggestion.Reference)
	m.startPull()
	v.dlg.Hide()
	v.app.Show("models")
}

func (v *welcomeView) askDir() { v.pickDir(v.move) }

// move moves the models into dir, with a progress bar when they are copied.
func (v *welcomeView) move(dir string) {
	v.change.Disable()
	v.moveBar.SetValue(0)
	v.moveBar.Show()
	v.moveNote.SetText("Moving the models to " + dir + " …")
	v.moveNote.Show()
	go func() {
		err := v.app.c.MoveModels(context.Background(), dir, func(done, total int64) {
			if total > 0 {
				v.app.do(func() { v.moveBar.SetValue(float64(done) / float64(total)) })
			}
		})
		v.app.do(func() { v.moveDone(dir, err) })
	}()
}

func (v *welcomeView) moveDone(dir string, err error) {
	v.change.Enable()
	v.moveBar.Hide()
	if err != nil {
		v.moveNote.SetText("Not moved: " + err.Error())
		return
	}
	v.dir.SetText(v.app.c.ModelsDir())
	v.moveNote.SetText("Moved. New downloads go to " + dir + ".")
	v.app.refresh()
}
