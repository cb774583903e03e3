package tray

import (
	"fmt"
	"image"
	"strings"
	"sync/atomic"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// attachBar is the playground's attachments: the Attach button, the chips of the files that go
// with the next message (each with ✕), and a note saying why Attach is off for a model that
// takes neither images nor audio (fyne has no tooltips).
type attachBar struct {
	app     *App
	button  *widget.Button
	note    *widget.Label
	chips   *fyne.Container
	row     fyne.CanvasObject // Attach, then the chips (scrolled sideways) or the note
	pending []Attachment
	model   Model // the chosen model's abilities
	thumbs  map[*byte]image.Image
	dialog  *dialog.FileDialog // the open file dialog (tests)
	loading atomic.Int32       // files being read (tests wait for them)
	onError func(string)
}

func newAttachBar(a *App, onError func(string)) *attachBar {
	b := &attachBar{app: a, chips: container.NewHBox(), thumbs: map[*byte]image.Image{}, onError: onError}
	b.button = widget.NewButtonWithIcon("Attach", theme.FileIcon(), b.choose)
	b.note = widget.NewLabel("")
	b.note.Importance = widget.LowImportance
	b.row = container.NewBorder(nil, nil, b.button, nil, container.NewHScroll(container.NewHBox(b.chips, b.note)))
	b.setModel(Model{}, false)
	return b
}

// setModel enables Attach for a model that sees or hears; known is false while none is chosen.
func (b *attachBar) setModel(m Model, known bool) {
	b.model = m
	switch {
	case m.Vision || m.Audio:
		b.button.Enable()
		b.note.SetText("Attach or paste (Ctrl+V) " + strings.Join(takes(m), " or ") + " files")
	case known:
		b.button.Disable()
		b.note.SetText(m.ID + " takes text only: choose a model that sees or hears to attach files")
	default:
		b.button.Disable()
		b.note.SetText("")
	}
}

// takes names what m takes besides text: "image", "audio".
func takes(m Model) []string {
	var out []string
	if m.Vision {
		out = append(out, kindImage)
	}
	if m.Audio {
		out = append(out, kindAudio)
	}
	return out
}

// choose opens a file dialog for the kinds the model takes.
func (b *attachBar) choose() {
	d := dialog.NewFileOpen(b.fileChosen, b.app.win)
	d.SetFilter(storage.NewExtensionFileFilter(attachExtensions(b.model.Vision, b.model.Audio)))
	d.Resize(fyne.NewSize(700, 480))
	b.dialog = d
	d.Show()
}

// fileChosen reads the file the dialog picked (nil: cancelled).
func (b *attachBar) fileChosen(r fyne.URIReadCloser, err error) {
	b.dialog = nil
	if err != nil {
		b.onError("Cannot open it: " + err.Error())
		return
	}
	if r == nil {
		return
	}
	b.readIn([]opener{func() (Attachment, error) {
		defer r.Close()
		return readAttachment(r.URI().Name(), r)
	}})
}

// attachURIs attaches dropped files; anything else is refused with a message.
func (b *attachBar) attachURIs(uris []fyne.URI) {
	var files []opener
	for _, u := range uris {
		files = append(files, func() (Attachment, error) {
			r, err := storage.Reader(u)
			if err != nil {
				return Attachment{}, fmt.Errorf("cannot open %s: %w", u.Name(), err)
			}
			defer r.Close()
			return readAttachment(u.Name(), r)
		})
	}
	b.readIn(files)
}

// readIn reads files off the UI thread (a big photo takes a while to read and to shrink into
// its thumbnail), then attaches them in their order; reading is the loading counter's.
func (b *attachBar) readIn(files []opener) {
	b.loading.Add(1)
	go func() {
		var atts []Attachment
		var thumbs []image.Image
		var errs []string
		for _, open := range files {
			a, err := open()
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			var thumb image.Image
			if attachKind(a.MIME) == kindImage {
				thumb = thumbnail(a.Data)
			}
			atts, thumbs = append(atts, a), append(thumbs, thumb)
		}
		b.app.do(func() {
			defer b.loading.Add(-1)
			for i, a := range atts {
				b.thumbs[&a.Data[0]] = thumbs[i]
			}
			if len(errs) > 0 {
				b.onError(strings.Join(errs, "; "))
			}
			b.add(atts...)
		})
	}()
}

// add attaches the files the model can take; another kind is refused with a message.
func (b *attachBar) add(atts ...Attachment) {
	for _, a := range atts {
		kind := attachKind(a.MIME)
		if kind == kindImage && !b.model.Vision || kind == kindAudio && !b.model.Audio {
			b.onError(fmt.Sprintf("%s is %s, and %s does not take %s input", a.Name, article(kind), b.modelName(), kind))
			continue
		}
		b.pending = append(b.pending, a)
	}
	b.redraw()
}

func (b *attachBar) modelName() string {
	if b.model.ID == "" {
		return "the chosen model"
	}
	return b.model.ID
}

func article(kind string) string {
	if kind == kindImage {
		return "an image"
	}
	return "an audio clip"
}

// remove drops the i-th pending attachment.
func (b *attachBar) remove(i int) {
	if i < 0 || i >= len(b.pending) {
		return
	}
	b.pending = append(b.pending[:i:i], b.pending[i+1:]...)
	b.redraw()
}

// take hands the pending attachments to the next message and clears the chips.
func (b *attachBar) take() []Attachment {
	atts := b.pending
	b.pending = nil
	b.redraw()
	return atts
}

// restore puts a message's attachments back (its reply failed: it may be sent again).
func (b *attachBar) restore(atts []Attachment) {
	b.pending = append(atts[:len(atts):len(atts)], b.pending...)
	b.redraw()
}

func (b *attachBar) redraw() {
	b.chips.RemoveAll()
	for i, a := range b.pending {
		b.chips.Add(b.chip(a, 40, func() { b.remove(i) }))
	}
	if len(b.pending) == 0 {
		b.note.Show()
	} else {
		b.note.Hide()
	}
	b.chips.Refresh()
}

// chip is one attachment: its thumbnail (or icon) side pixels tall, name and size, and ✕ when
// onRemove is set.
func (b *attachBar) chip(a Attachment, side float32, onRemove func()) fyne.CanvasObject {
	var pic fyne.CanvasObject
	if img := b.thumb(a); img != nil {
		c := canvas.NewImageFromImage(img)
		c.FillMode = canvas.ImageFillContain
		c.SetMinSize(fyne.NewSize(side, side))
		pic = c
	} else {
		icon := theme.FileImageIcon()
		if attachKind(a.MIME) == kindAudio {
			icon = theme.MediaMusicIcon()
		}
		pic = container.NewGridWrap(fyne.NewSize(40, 40), widget.NewIcon(icon)) // an icon stays small
	}
	label := container.NewVBox(layout.NewSpacer(), widget.NewLabel(chipText(a)), layout.NewSpacer()) // centred on the picture
	row := container.NewHBox(pic, label)
	if onRemove != nil {
		x := widget.NewButtonWithIcon("", theme.CancelIcon(), onRemove)
		x.Importance = widget.LowImportance
		row.Add(x)
	}
	bg := canvas.NewRectangle(theme.Color(theme.ColorNameInputBackground))
	bg.CornerRadius = 6
	return container.NewStack(bg, container.NewPadded(row))
}

// thumb is an image attachment's thumbnail, made once.
func (b *attachBar) thumb(a Attachment) image.Image {
	if attachKind(a.MIME) != kindImage || len(a.Data) == 0 {
		return nil
	}
	img, ok := b.thumbs[&a.Data[0]]
	if !ok {
		img = thumbnail(a.Data)
		b.thumbs[&a.Data[0]] = img
	}
	return img
}

// attachmentsSegment shows a sent message's attachments in the transcript, as chips.
type attachmentsSegment struct {
	bar  *attachBar
	atts []Attachment
}

func (s *attachmentsSegment) Inline() bool { return false }

func (s *attachmentsSegment) Textual() string {
	names := make([]string, len(s.atts))
	for i, a := range s.atts {
		names[i] = "[" + attachKind(a.MIME) + ": " + chipText(a) + "]"
	}
	return strings.Join(names, " ")
}

func (s *attachmentsSegment) Visual() fyne.CanvasObject {
	box := container.NewHBox()
	s.Update(box)
	return box
}

func (s *attachmentsSegment) Update(o fyne.CanvasObject) {
	box, ok := o.(*fyne.Container)
	if !ok {
		return
	}
	box.RemoveAll()
	for _, a := range s.atts {
		box.Add(s.bar.chip(a, 64, nil))
	}
}

func (s *attachmentsSegment) Select(_, _ fyne.Position) {}
func (s *attachmentsSegment) SelectedText() string      { return "" }
func (s *attachmentsSegment) Unselect()                 {}

// pasteEntry is the message input: a paste that holds attachments (a file's path, a data URL)
// attaches them; any other paste is text, as in a plain entry.
type pasteEntry struct {
	widget.Entry
	onPaste func(text string) bool // reports whether the paste was taken as attachments
}

func newPasteEntry() *pasteEntry {
	e := &pasteEntry{}
	e.MultiLine = true
	e.Wrapping = fyne.TextWrapWord
	e.ExtendBaseWidget(e)
	return e
}

func (e *pasteEntry) TypedShortcut(s fyne.Shortcut) {
	if p, ok := s.(*fyne.ShortcutPaste); ok && p.Clipboard != nil && e.onPaste != nil && e.onPaste(p.Clipboard.Content()) {
		return
	}
	e.Entry.TypedShortcut(s)
}
