package tray

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"
)

// pngOf is a w×h PNG, each image a different colour.
func pngOf(t *testing.T, w, h int, c color.RGBA) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// writeFile writes data to dir/name and returns its path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// withSensingModels adds a model that sees and hears and one that only sees, and picks the
// first in the playground.
func withSensingModels(t *testing.T, app *App, f *fakeController) {
	t.Helper()
	f.mu.Lock()
	f.models = append(f.models,
		Model{ID: "gemma-omni", Quantization: "Q4_K_M", Size: 3 << 30, State: "loaded", Vision: true, Audio: true},
		Model{ID: "llava", Quantization: "Q8_0", Size: 4 << 30, State: "unloaded", Vision: true})
	f.mu.Unlock()
	ui(app, func() {
		app.refresh()
		app.Show("playground")
		app.playground.selectModel("gemma-omni")
	})
}

// settled waits for the files being read to be attached.
func settled(t *testing.T, app *App) {
	t.Helper()
	eventually(t, app, "the files are read", func() bool { return app.playground.attach.loading.Load() == 0 })
}

// chipLabels are the texts of the chips above the input.
func chipLabels(v *playgroundView) []string {
	var out []string
	var walk func(o fyne.CanvasObject)
	walk = func(o fyne.CanvasObject) {
		switch x := o.(type) {
		case *widget.Label:
			out = append(out, x.Text)
		case *fyne.Container:
			for _, c := range x.Objects {
				walk(c)
			}
		}
	}
	for _, c := range v.attach.chips.Objects {
		walk(c)
	}
	return out
}

// removeButton is the ✕ of the i-th chip.
func removeButton(t *testing.T, v *playgroundView, i int) *widget.Button {
	t.Helper()
	var found *widget.Button
	var walk func(o fyne.CanvasObject)
	walk = func(o fyne.CanvasObject) {
		switch x := o.(type) {
		case *widget.Button:
			found = x
		case *fyne.Container:
			for _, c := range x.Objects {
				walk(c)
			}
		}
	}
	walk(v.attach.chips.Objects[i])
	if found == nil {
		t.Fatalf("chip %d has no ✕", i)
	}
	return found
}

// TestPlaygroundAttachments: files chosen in the dialog and dropped on the window show as chips
// (name, size, a thumbnail for an image); ✕ removes one; Send hands the rest, bytes intact and
// in order, to the controller with the message; the transcript keeps them with the turn.
func TestPlaygroundAttachments(t *testing.T) {
	app, f := newTestApp(t)
	withSensingModels(t, app, f)
	v := app.playground
	if v.attach.button.Disabled() || v.model.Selected != "gemma-omni (vision · audio)" {
		t.Fatalf("attach disabled %v for %q", v.attach.button.Disabled(), v.model.Selected)
	}
	dir := t.TempDir()
	red, blue := pngOf(t, 300, 200, color.RGBA{255, 0, 0, 255}), pngOf(t, 8, 8, color.RGBA{0, 0, 255, 255})
	wav := []byte("RIFF\x24\x00\x00\x00WAVEfmt ")
	redPath, bluePath := writeFile(t, dir, "red.png", red), writeFile(t, dir, "blue.PNG", blue)
	wavPath := writeFile(t, dir, "hello.wav", wav)

	// Attach opens the file dialog; choosing a file is its callback.
	ui(app, func() { test.Tap(v.attach.button) })
	if v.attach.dialog == nil {
		t.Fatal("Attach opened no file dialog")
	}
	ui(app, func() { v.attach.dialog.Hide() }) // as choosing a file does
	r, err := storage.Reader(storage.NewFileURI(redPath))
	if err != nil {
		t.Fatal(err)
	}
	ui(app, func() { v.attach.fileChosen(r, nil) })
	settled(t, app)
	ui(app, func() {
		v.attach.attachURIs([]fyne.URI{storage.NewFileURI(wavPath), storage.NewFileURI(bluePath)})
	})
	settled(t, app)
	got := chipLabels(v)
	if want := []string{"red.png · " + sizeText(red), "hello.wav · 16 B", "blue.PNG · " + sizeText(blue)}; !slices.Equal(got, want) {
		t.Fatalf("chips %q, want %q", got, want)
	}
	if img := v.attach.thumb(v.attach.pending[0]); img == nil || img.Bounds().Dx() != thumbSide || img.Bounds().Dy() != 64 {
		t.Fatalf("red.png's thumbnail %v", img)
	}
	if v.attach.thumb(v.attach.pending[1]) != nil {
		t.Fatal("an audio clip has an icon, not a thumbnail")
	}

	ui(app, func() { test.Tap(removeButton(t, v, 1)) }) // ✕ on hello.wav
	if got := chipLabels(v); len(got) != 2 || !strings.HasPrefix(got[1], "blue.PNG") {
		t.Fatalf("after ✕: %q", got)
	}
	ui(app, func() { test.Type(v.input, "What colours are these?") })
	ui(app, func() { test.Tap(v.send) })
	eventually(t, app, "the reply completes", func() bool { return strings.Contains(v.stats.Text, "tokens/s") })

	f.mu.Lock()
	asked := f.asked
	f.mu.Unlock()
	if len(asked) != 1 {
		t.Fatalf("%d chats", len(asked))
	}
	user := asked[0][len(asked[0])-1]
	if user.Content != "What colours are these?" || len(user.Attachments) != 2 ||
		user.Attachments[0].Name != "red.png" || user.Attachments[0].MIME != "image/png" || !bytes.Equal(user.Attachments[0].Data, red) ||
		user.Attachments[1].Name != "blue.PNG" || !bytes.Equal(user.Attachments[1].Data, blue) {
		t.Fatalf("the controller got %q with %d attachments", user.Content, len(user.Attachments))
	}
	if len(v.attach.pending) != 0 || !v.attach.note.Visible() {
		t.Fatalf("the chips stay after Send: %q", chipLabels(v))
	}
	text := v.transcriptText()
	if !strings.Contains(text, "You\n[image: red.png · "+sizeText(red)+"] [image: blue.PNG · "+sizeText(blue)+"]\nWhat colours are these?") {
		t.Fatalf("transcript %q", text)
	}
	// The next turn sends the first turn's images again (the model needs the whole conversation).
	ui(app, func() { test.Type(v.input, "And now?") })
	ui(app, func() { test.Tap(v.send) })
	eventually(t, app, "the second reply", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.asked) == 2 && v.cancel == nil
	})
	if first := f.asked[1][0]; len(first.Attachments) != 2 || !bytes.Equal(first.Attachments[1].Data, blue) {
		t.Fatalf("the second chat's first turn has %d attachments", len(first.Attachments))
	}
}

func sizeText(b []byte) string { return chipText(Attachment{Data: b})[len(" · "):] }

// TestPlaygroundAttachOnlyWhatTheModelTakes: a text-only model turns Attach off and says why; a
// model that only sees refuses an audio clip; a failed reply gives the files back.
func TestPlaygroundAttachOnlyWhatTheModelTakes(t *testing.T) {
	app, f := newTestApp(t)
	withSensingModels(t, app, f)
	v := app.playground
	ui(app, func() { v.selectModel("stories260K") })
	if !v.attach.button.Disabled() || !strings.Contains(v.attach.note.Text, "stories260K takes text only") {
		t.Fatalf("text-only model: disabled %v, note %q", v.attach.button.Disabled(), v.attach.note.Text)
	}
	ui(app, func() { v.selectModel("llava") })
	if v.attach.button.Disabled() || v.attach.note.Text != "Attach or paste (Ctrl+V) image files" {
		t.Fatalf("vision model: disabled %v, note %q", v.attach.button.Disabled(), v.attach.note.Text)
	}
	dir := t.TempDir()
	ui(app, func() {
		v.attach.attachURIs([]fyne.URI{storage.NewFileURI(writeFile(t, dir, "a.mp3", []byte("ID3...")))})
	})
	settled(t, app)
	if len(v.attach.pending) != 0 || v.stats.Text != "a.mp3 is an audio clip, and llava does not take audio input" {
		t.Fatalf("an audio clip for a vision model: %d pending, %q", len(v.attach.pending), v.stats.Text)
	}
	ui(app, func() {
		v.attach.attachURIs([]fyne.URI{storage.NewFileURI(writeFile(t, dir, "notes.txt", []byte("hi")))})
	})
	settled(t, app)
	if len(v.attach.pending) != 0 || !strings.Contains(v.stats.Text, "attach a PNG, JPEG, WebP or GIF image") {
		t.Fatalf("a text file: %d pending, %q", len(v.attach.pending), v.stats.Text)
	}
	if got := attachExtensions(true, false); !slices.Equal(got, []string{".png", ".jpg", ".jpeg", ".webp", ".gif"}) {
		t.Fatalf("the dialog's filter for a vision model: %v", got)
	}

	// The core refuses the image (say, the model's projector failed): the error shows and the
	// image is back among the chips, ready to send again.
	f.mu.Lock()
	f.refuse = errUnsupported
	f.mu.Unlock()
	img := pngOf(t, 4, 4, color.RGBA{0, 255, 0, 255})
	ui(app, func() { v.attach.add(Attachment{Name: "green.png", MIME: "image/png", Data: img}) })
	ui(app, func() { test.Tap(v.send) })
	eventually(t, app, "the error shows", func() bool { return v.cancel == nil && strings.HasPrefix(v.stats.Text, "Error: ") })
	if !strings.Contains(v.stats.Text, "unsupported_input") || len(v.attach.pending) != 1 || len(v.history) != 0 {
		t.Fatalf("after the refusal: %q, %d pending, history %d", v.stats.Text, len(v.attach.pending), len(v.history))
	}
}

// errUnsupported is the core's refusal as the controller passes it on.
var errUnsupported = errorString("unsupported_input: messages[0] attachment green.png: llava cannot take images")

type errorString string

func (e errorString) Error() string { return string(e) }

// TestPlaygroundPasteAttachments: fyne's clipboard holds text, so a paste attaches a copied
// file's path (or file:// URI) or an image data URL; any other text is pasted as text.
func TestPlaygroundPasteAttachments(t *testing.T) {
	app, f := newTestApp(t)
	withSensingModels(t, app, f)
	v := app.playground
	dir := t.TempDir()
	img := pngOf(t, 2, 2, color.RGBA{9, 9, 9, 255})
	p1, p2 := writeFile(t, dir, "one.png", img), writeFile(t, dir, "two words.jpg", []byte{0xff, 0xd8, 0xff})
	clip := test.NewClipboard()
	paste := func(text string) {
		clip.SetContent(text)
		ui(app, func() { v.input.TypedShortcut(&fyne.ShortcutPaste{Clipboard: clip}) })
		settled(t, app)
	}
	paste("data:image/png;base64," + base64.StdEncoding.EncodeToString(img))
	paste(p1 + "\n" + storage.NewFileURI(p2).String())
	if got := chipLabels(v); len(got) != 3 || !strings.HasPrefix(got[0], "pasted.png · ") || !strings.HasPrefix(got[1], "one.png") || !strings.HasPrefix(got[2], "two words.jpg") {
		t.Fatalf("chips after pastes: %q", got)
	}
	if !bytes.Equal(v.attach.pending[0].Data, img) || v.attach.pending[2].MIME != "image/jpeg" || v.input.Text != "" {
		t.Fatalf("pasted %q / %q, input %q", v.attach.pending[0].MIME, v.attach.pending[2].MIME, v.input.Text)
	}
	paste("a story about " + p1) // text that merely mentions a path
	if v.input.Text != "a story about "+p1 || len(v.attach.pending) != 3 {
		t.Fatalf("text paste: input %q, %d pending", v.input.Text, len(v.attach.pending))
	}
	paste("data:text/html;base64,PGI+")
	if len(v.attach.pending) != 3 || !strings.Contains(v.stats.Text, "not a base64 image or audio file") {
		t.Fatalf("a data URL of another type: %d pending, %q", len(v.attach.pending), v.stats.Text)
	}
	paste("data:image/png;base64,@@@")
	if !strings.Contains(v.stats.Text, "does not decode") {
		t.Fatalf("bad base64: %q", v.stats.Text)
	}
}

// TestModelsShowWhatTheySeeAndHear: the Models tab badges a model that sees or hears, and the
// playground's picker names it.
func TestModelsShowWhatTheySeeAndHear(t *testing.T) {
	app, f := newTestApp(t)
	withSensingModels(t, app, f)
	for id, want := range map[string]string{"gemma-omni": "vision · audio", "llava": "vision", "stories260K": ""} {
		if got := app.models.rows[id].senses.Text; got != want {
			t.Errorf("%s's badge %q, want %q", id, got, want)
		}
	}
	if got := app.playground.model.Options; !slices.Equal(got, []string{"stories260K", "hf.co/owner/tiny-GGUF:Q8_0", "gemma-omni (vision · audio)", "llava (vision)"}) {
		t.Fatalf("picker %q", got)
	}
	if senseBadge(Model{ID: "x"}, nil) != nil {
		t.Fatal("a text-only model has a badge")
	}
}

// TestPlaygroundImageTurn: an image sent with a question stays with its turn, as a larger
// thumbnail above the question, while the reply streams below.
func TestPlaygroundImageTurn(t *testing.T) {
	app, f := newTestApp(t)
	withSensingModels(t, app, f)
	f.reply = "A sunny meadow under a blue sky, with a yellow sun in the corner and one small tree."
	v := app.playground
	meadow := meadowPNG(t)
	ui(app, func() { v.attach.add(Attachment{Name: "meadow.png", MIME: "image/png", Data: meadow}) })
	ui(app, func() { test.Type(v.input, "What is in this picture?") })
	ui(app, func() { test.Tap(v.send) })
	eventually(t, app, "the reply completes", func() bool { return strings.Contains(v.stats.Text, "tokens/s") })
	var seg *attachmentsSegment
	for _, r := range v.rows {
		if r.atts != nil {
			seg = r.atts
		}
	}
	if seg == nil || len(seg.atts) != 1 || !bytes.Equal(seg.atts[0].Data, meadow) {
		t.Fatalf("the turn's image is not in the transcript: %q", v.transcriptText())
	}
	var pic *canvas.Image
	ui(app, func() {
		chip := seg.Visual().(*fyne.Container).Objects[0].(*fyne.Container)
		row := chip.Objects[1].(*fyne.Container).Objects[0].(*fyne.Container)
		pic, _ = row.Objects[0].(*canvas.Image)
	})
	if pic == nil || pic.MinSize().Height != 64 || pic.Image.Bounds().Dx() != thumbSide {
		t.Fatalf("the transcript's thumbnail %+v", pic)
	}
	ui(app, func() {
		v.attach.attachURIs([]fyne.URI{storage.NewFileURI(writeFile(t, t.TempDir(), "birdsong.mp3", []byte("ID3\x04")))})
	})
	settled(t, app)
	if len(v.attach.pending) != 1 {
		t.Fatalf("%d files wait for the next message", len(v.attach.pending))
	}
}

// meadowPNG is a small picture: sky, sun, grass and a tree.
func meadowPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 320, 240))
	for y := range 240 {
		for x := range 320 {
			c := color.RGBA{uint8(90 + y/3), uint8(150 + y/4), 235, 255} // sky
			switch {
			case (x-260)*(x-260)+(y-50)*(y-50) < 26*26:
				c = color.RGBA{250, 210, 40, 255} // sun
			case y > 170:
				c = color.RGBA{60, uint8(140 + (x+y)%20), 60, 255} // grass
			case x > 70 && x < 82 && y > 120:
				c = color.RGBA{110, 70, 30, 255} // trunk
			case (x-76)*(x-76)+(y-105)*(y-105) < 30*30:
				c = color.RGBA{40, 120, 50, 255} // crown
			}
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
