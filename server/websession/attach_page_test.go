package websession

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestPageAttachesFiles drives the page in Chromium over the fake session: a text-only model
// turns Attach off and says why; for a model that sees and hears, a PNG and a WAV chosen with
// the file input show as chips (the PNG's preview is a blob: image the CSP lets load), one is
// removed with ✕, and Send uploads the rest and names them in the chat: the session gets the
// files' bytes on their turn, and the user's bubble keeps the chips.
func TestPageAttachesFiles(t *testing.T) {
	f, srv, h := startFake(t, Config{})
	f.mu.Lock()
	f.models["omni"] = "loaded"
	f.sees = map[string]Model{"omni": {Vision: true, Audio: true}}
	f.mu.Unlock()
	dir := t.TempDir()
	img := image.NewRGBA(image.Rect(0, 0, 64, 48)) // sky, sun and grass
	for y := range 48 {
		for x := range 64 {
			c := color.RGBA{uint8(90 + 2*y), uint8(150 + y), 235, 255}
			switch {
			case (x-50)*(x-50)+(y-11)*(y-11) < 36:
				c = color.RGBA{250, 210, 40, 255}
			case y > 34:
				c = color.RGBA{60, 150, 60, 255}
			}
			img.Set(x, y, c)
		}
	}
	var pngBytes bytes.Buffer
	if err := png.Encode(&pngBytes, img); err != nil {
		t.Fatal(err)
	}
	pngPath, wavPath := filepath.Join(dir, "photo.png"), filepath.Join(dir, "voice.wav")
	wav := []byte("RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00")
	if err := os.WriteFile(pngPath, pngBytes.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wavPath, wav, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := browser(t)
	eval := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}
	pick := func(model string) chromedp.Action[chromedp.Void] {
		return chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById("model"); s.value = "` + model + `"; s.dispatchEvent(new Event("change")) })()`)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/#token="+testToken), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`)), pick("tiny")); err != nil {
		t.Fatal(err)
	}
	if d, note := eval(`String(document.getElementById("attach").disabled)`), eval(`document.getElementById("attachnote").textContent`); d != "true" || !strings.Contains(note, "tiny takes text only") {
		t.Fatalf("a text-only model: attach disabled %s, note %q", d, note)
	}
	if opts := eval(`Array.from(document.querySelectorAll("#model option")).map(o => o.textContent).join("|")`); opts != "omni · vision, audio (loaded)|tiny" {
		t.Fatalf("model options %q", opts)
	}
	err := chromedp.Do(ctx, pick("omni"),
		chromedp.SetUploadFiles(chromedp.CSS(`#file`), []string{pngPath, wavPath}),
		chromedp.WaitVisible(chromedp.CSS(`#chips .chip[data-kind="audio"]`)),
		chromedp.Poll[chromedp.Void](`(() => { const i = document.querySelector("#chips .chip img"); return i && i.complete && i.naturalWidth === 64 })()`, chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	chips := eval(`Array.from(document.querySelectorAll("#chips .chip")).map(c => [c.dataset.kind, c.querySelector(".name").textContent, c.querySelector(".size").textContent].join(" ")).join("|")`)
	if want := "image photo.png " + sizeJS(pngBytes.Len()) + "|audio voice.wav " + sizeJS(len(wav)); chips != want {
		t.Fatalf("chips %q, want %q", chips, want)
	}
	if accept := eval(`document.getElementById("file").accept`); accept != ".png,.jpg,.jpeg,.webp,.gif,.wav,.mp3,.flac" {
		t.Fatalf("the file input accepts %q", accept)
	}
	// ✕ on the clip, then send the photo with a question.
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#chips .chip[data-kind="audio"] button.x`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#chips .chip[data-kind="audio"]`)),
		chromedp.SendKeys(chromedp.CSS(`#input`), "What is in the picture?"),
		chromedp.Click(chromedp.CSS(`#send`)),
		chromedp.WaitVisible(chromedp.CSS(`#convs li`)))
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	f.mu.Lock()
	msgs := f.lastMsgs
	f.mu.Unlock()
	if len(msgs) != 1 || msgs[0].Content != "What is in the picture?" || len(msgs[0].Attachments) != 1 {
		t.Fatalf("the session got %+v", msgs)
	}
	if a := msgs[0].Attachments[0]; a.Name != "photo.png" || a.MIME != "image/png" || !bytes.Equal(a.Data, pngBytes.Bytes()) {
		t.Fatalf("the session got %s %s with %d bytes, want the PNG's %d", a.Name, a.MIME, len(a.Data), pngBytes.Len())
	}
	if n := eval(`String(document.querySelectorAll("#chips .chip").length) + "/" + document.getElementById("chips").hidden`); n != "0/true" {
		t.Fatalf("chips after send: %s", n)
	}
	if bubble := eval(`Array.from(document.querySelectorAll(".msg.user .atts .chip .name")).map(n => n.textContent).join("|")`); bubble != "photo.png" {
		t.Fatalf("the user's bubble shows %q", bubble)
	}
	if reply := eval(`document.querySelector(".msg.assistant .body").textContent`); reply != "Hello, world." {
		t.Fatalf("reply %q", reply)
	}

	// Paste an image file and drop a text file: the image is attached, the text file refused.
	b64 := base64.StdEncoding.EncodeToString(pngBytes.Bytes())
	err = chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`(() => {
		const bytes = Uint8Array.from(atob("`+b64+`"), (c) => c.charCodeAt(0));
		const paste = new DataTransfer(); paste.items.add(new File([bytes], "clip.png", {type: "image/png"}));
		document.getElementById("input").dispatchEvent(new ClipboardEvent("paste", {clipboardData: paste, bubbles: true, cancelable: true}));
		const drop = new DataTransfer(); drop.items.add(new File(["hello"], "notes.txt", {type: "text/plain"}));
		document.getElementById("chat").dispatchEvent(new DragEvent("drop", {dataTransfer: drop, bubbles: true, cancelable: true}));
	})()`), chromedp.WaitVisible(chromedp.CSS(`#chips .chip`)))
	if err != nil {
		t.Fatalf("paste and drop: %v", err)
	}
	if names, stats := eval(`Array.from(document.querySelectorAll("#chips .chip .name")).map(n => n.textContent).join("|")`), eval(`document.getElementById("stats").textContent`); names != "clip.png" || !strings.Contains(stats, "notes.txt: attach a PNG") {
		t.Fatalf("after paste and drop: chips %q, stats %q", names, stats)
	}

	// The server forgets its uploads (a restart): the next turn's chat is told so, and the page
	// sends the conversation's files again by itself.
	h.uploads.mu.Lock()
	h.uploads.files, h.uploads.total = map[string]*upload{}, 0
	h.uploads.mu.Unlock()
	err = chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`#input`), "And this one?"), chromedp.Click(chromedp.CSS(`#send`)),
		chromedp.WaitVisible(chromedp.CSS(`.msg.assistant:nth-of-type(4)`)), chromedp.WaitNotPresent(chromedp.CSS(`.msg.assistant.streaming`)))
	if err != nil {
		t.Fatalf("second turn: %v", err)
	}
	f.mu.Lock()
	msgs = f.lastMsgs
	f.mu.Unlock()
	if len(msgs) != 3 || len(msgs[0].Attachments) != 1 || len(msgs[2].Attachments) != 1 ||
		!bytes.Equal(msgs[0].Attachments[0].Data, pngBytes.Bytes()) || msgs[2].Attachments[0].Name != "clip.png" || !bytes.Equal(msgs[2].Attachments[0].Data, pngBytes.Bytes()) {
		t.Fatalf("the second turn reached the session as %d messages", len(msgs))
	}
	if len(h.uploads.files) != 3 { // clip.png, then both again after the refusal
		t.Fatalf("the server holds %d uploads after the retry", len(h.uploads.files))
	}
}

// sizeJS is attach.js's size text.
func sizeJS(n int) string {
	if n < 1000 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f kB", float64(n)/1e3)
}
