package app

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/superfluid/superfluid/app/browsertest"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server/store"
)

// TestWebPlaygroundAttachesAnImage drives the browser playground over a real server, with the
// test model and a random vision projector beside it (mtmd encodes with it): the picker says
// the model sees, a PNG chosen in the file input shows as a chip, goes up with the message and
// reaches the engine: the reply's prompt holds the image's positions (the same question without
// it holds that many fewer), and the user's bubble keeps the picture.
func TestWebPlaygroundAttachesAnImage(t *testing.T) {
	b := browsertest.Start(t, 1100, 800)
	a, web, _ := startWebApp(t)
	dir := t.TempDir()
	model, proj := filepath.Join(dir, "seeing.gguf"), filepath.Join(dir, "mmproj-seeing.gguf")
	copyFile(t, testModel, model)
	opts := gguftest.VisionProjectorOptions{TextEmbd: 64}
	if err := gguftest.WriteVisionProjector(proj, opts); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Manager().Catalog().Add(context.Background(), models.AddRequest{Path: model, ID: "seeing", Projector: proj}); err != nil {
		t.Fatal(err)
	}
	picture := filepath.Join(dir, "meadow.png")
	writeMeadow(t, picture)

	b.Do("open the page", chromedp.Navigate(web.URL))
	b.WaitFor("the page is ready", `document.body.dataset.ready === "1"`, 30*time.Second)
	b.Do("pick the model", chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById("model"); s.value = "seeing"; s.dispatchEvent(new Event("change")) })()`))
	if opt := b.Text(`#model option[value="seeing"]`); opt != "seeing · vision" {
		t.Fatalf("the picker offers %q", opt)
	}
	b.Do("load", chromedp.Click(chromedp.CSS(`#load`)))
	b.WaitFor("loaded", `document.body.dataset.modelState === "loaded"`, time.Minute)
	b.Do("settings", chromedp.Evaluate[chromedp.Void](`document.querySelector("details#opts").open = true`),
		chromedp.SetValue(chromedp.CSS(`#temperature`), "0"), chromedp.SetValue(chromedp.CSS(`#max_tokens`), "8"))

	ask := func(withPicture bool) store.RequestRecord {
		t.Helper()
		before := len(playgroundRecords(t, a, "seeing"))
		if withPicture {
			b.Do("attach", chromedp.SetUploadFiles(chromedp.CSS(`#file`), []string{picture}))
			b.WaitFor("the chip's preview", `(() => { const i = document.querySelector("#chips .chip img"); return i && i.complete && i.naturalWidth === 320 })()`, 10*time.Second)
		}
		b.Do("send", chromedp.SendKeys(chromedp.CSS(`#input`), "Once upon a time"), chromedp.Click(chromedp.CSS(`#send`)))
		b.WaitFor("the reply", `document.querySelector(".msg.assistant:last-child") && !document.querySelector(".msg.assistant.streaming") && /tokens\/s/.test(document.getElementById("stats").textContent)`, time.Minute)
		var recs []store.RequestRecord
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if recs = playgroundRecords(t, a, "seeing"); len(recs) > before {
				break
			}
		}
		if len(recs) <= before || recs[0].Status != 200 {
			t.Fatalf("no record of the reply (stats %q): %+v", b.Text("#stats"), recs)
		}
		return recs[0]
	}
	with := ask(true)
	if got := browsertest.Eval[string](b, `Array.from(document.querySelectorAll(".msg.user .atts .chip .name")).map(n => n.textContent).join("|")`); got != "meadow.png" {
		t.Fatalf("the user's bubble shows %q", got)
	}
	b.Screenshot("playground-attach")
	b.Do("new chat", chromedp.Click(chromedp.CSS(`#new`)), chromedp.WaitNotPresent(chromedp.CSS(`.msg`)))
	without := ask(false)
	t.Logf("prompt tokens with the image %d, without %d (the projector makes %d a picture)", with.PromptTokens, without.PromptTokens, opts.ImageTokens())
	if with.PromptTokens-without.PromptTokens < opts.ImageTokens() {
		t.Fatalf("prompt tokens with the image %d, without %d: the image's %d positions are missing", with.PromptTokens, without.PromptTokens, opts.ImageTokens())
	}
}

// playgroundRecords are the recent playground requests to model, newest first.
func playgroundRecords(t *testing.T, a *App, model string) []store.RequestRecord {
	t.Helper()
	recs, err := a.Store().RecentRequests(context.Background(), 50)
	if err != nil {
		t.Fatal(err)
	}
	var out []store.RequestRecord
	for _, r := range recs {
		if r.Model == model && r.Endpoint == "playground" {
			out = append(out, r)
		}
	}
	return out
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeMeadow writes a 320×240 PNG: sky, sun and grass.
func writeMeadow(t *testing.T, path string) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 320, 240))
	for y := range 240 {
		for x := range 320 {
			c := color.RGBA{uint8(90 + y/3), uint8(150 + y/4), 235, 255}
			switch {
			case (x-260)*(x-260)+(y-50)*(y-50) < 26*26:
				c = color.RGBA{250, 210, 40, 255}
			case y > 170:
				c = color.RGBA{60, uint8(140 + (x+y)%20), 60, 255}
			}
			img.Set(x, y, c)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
}

// TestWebAttachmentLimitIsTheMediaLimit: the browser transport takes files up to the core's
// --media-max-bytes, tells the page so (it refuses a bigger file before sending it), and
// answers a bigger upload 413 saying what to do.
func TestWebAttachmentLimitIsTheMediaLimit(t *testing.T) {
	_, web, _ := startWebAppWith(t, func(cfg *Config) { cfg.MediaMaxBytes = 1 << 20 })
	base := strings.TrimSuffix(web.URL[:strings.Index(web.URL, "/#")], "/")
	call := func(path, ctype string, body []byte) (int, string) {
		req, _ := http.NewRequest("POST", base+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+web.token)
		req.Header.Set("Content-Type", ctype)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := call("/web/rpc", "application/json", []byte(`{"id":1,"method":"limits"}`)); status != 200 || !strings.Contains(body, `"max_attachment":1048576`) {
		t.Fatalf("limits: %d %s", status, body)
	}
	if status, body := call("/web/attachments?name=big.png", "image/png", make([]byte, 1<<20+1)); status != 413 || !strings.Contains(body, "big.png is over 1 MiB") {
		t.Fatalf("a file over the limit: %d %s", status, body)
	}
	if status, body := call("/web/attachments?name=ok.png", "image/png", make([]byte, 1<<20)); status != 200 {
		t.Fatalf("a file at the limit: %d %s", status, body)
	}
}
