package websession

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

const chromiumPath = "/usr/bin/chromium"

// browser is a headless Chromium context, or a skip when Chromium is not installed.
func browser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("no Chromium at %s: %v", chromiumPath, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumPath),
		chromedp.NoSandbox, chromedp.WindowSize(1100, 800))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	return ctx
}

// TestPageRendersRepliesSafely drives the page in Chromium over the fake session: the token
// leaves the address bar, a model loads, a reply streams and renders as markdown, and markup
// in the reply (an <img onerror>, a <script>) stays text. Then the same over HTTP, with no
// WebSocket in the browser.
func TestPageRendersRepliesSafely(t *testing.T) {
	for _, transport := range []string{"ws", "http"} {
		t.Run(transport, func(t *testing.T) {
			f, srv, _ := startFake(t, Config{})
			f.reply = []string{"Here is `code` and **bold**.\n\n", "```go\nfmt.Println(1)\n```\n\n",
				`<img src=x onerror="window.__pwned=1">`, "\n\n<script>window.__pwned=2</script> [x](javascript:alert(1))"}
			f.pieceEvery = 20 * time.Millisecond
			ctx := browser(t)
			if transport == "http" {
				err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
					_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument,
						page.AddScriptToEvaluateOnNewDocumentParams{Source: "window.WebSocket = undefined"})
					return err
				}))
				if err != nil {
					t.Fatal(err)
				}
			}
			err := chromedp.Do(ctx,
				chromedp.Navigate(srv.URL+"/#token="+testToken),
				chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`)),
				chromedp.SetValue(chromedp.CSS(`#model`), "tiny"),
				chromedp.Click(chromedp.CSS(`#load`)),
				chromedp.WaitVisible(chromedp.CSS(`body[data-model-state="loaded"]`)),
				chromedp.SendKeys(chromedp.CSS(`#input`), "show me"),
				chromedp.Click(chromedp.CSS(`#send`)),
				chromedp.WaitReady(chromedp.CSS(`.msg.assistant.streaming`)),
				chromedp.WaitNotPresent(chromedp.CSS(`.msg.assistant.streaming`)),
				chromedp.WaitVisible(chromedp.CSS(`#convs li`)),
			)
			if err != nil {
				t.Fatal(err)
			}
			text := func(sel string) string {
				v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
				if err != nil {
					t.Fatalf("%s: %v", sel, err)
				}
				return v
			}
			eval := func(expr string) string {
				v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
				if err != nil {
					t.Fatalf("%s: %v", expr, err)
				}
				return v
			}
			hash, stored, mode := eval(`location.hash`), eval(`sessionStorage.getItem("superfluid-web-token")`), eval(`document.body.dataset.transport`)
			stats, body, code, strong := text(`#stats`), text(`.msg.assistant .body`), text(`.msg.assistant pre code`), text(`.msg.assistant strong`)
			imgs, scripts := eval(`String(document.querySelectorAll("#messages img").length)`), eval(`String(document.querySelectorAll("#messages script").length)`)
			pwned, href := eval(`String(window.__pwned)`), eval(`Array.from(document.querySelectorAll("#messages a")).map(a => a.href).join(",")`)
			if hash != "" || stored != testToken || mode != transport {
				t.Fatalf("hash %q stored %q transport %q", hash, stored, mode)
			}
			if imgs != "0" || scripts != "0" || pwned != "undefined" || href != "" {
				t.Fatalf("markup in the reply ran: %s img, %s script, pwned %s, links %q", imgs, scripts, pwned, href)
			}
			if !strings.Contains(body, `<img src=x onerror="window.__pwned=1">`) || code != "fmt.Println(1)" || strong != "bold" {
				t.Fatalf("body %q code %q strong %q", body, code, strong)
			}
			if !strings.Contains(stats, "42.5 tokens/s") || !strings.Contains(stats, "3 cached") {
				t.Fatalf("stats %q", stats)
			}
			if len(f.Conversations()) != 1 {
				t.Fatalf("%d conversations saved", len(f.Conversations()))
			}
		})
	}
}

// TestPageWithoutToken says how to open the page instead of failing silently.
func TestPageWithoutToken(t *testing.T) {
	_, srv, _ := startFake(t, Config{})
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`#notoken`))); err != nil {
		t.Fatal(err)
	}
	notice, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#notoken`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(notice, "#token=") {
		t.Fatalf("notice %q", notice)
	}
}
