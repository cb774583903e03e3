package app

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/superfluid/superfluid/server/store"
	"github.com/superfluid/superfluid/server/websession"
)

// TestWebFlag runs serve --web as a process: the URL with the token is printed once, the token
// file is 0600, the transport answers; a network --web address fails at start.
func TestWebFlag(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "serve", "--port", "0", "--data-dir", dir, "--web", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	found := make(chan []string, 1)
	go func() {
		re := regexp.MustCompile(`browser playground on (http://127\.0\.0\.1:\d+)/#token=([0-9a-f]{64}) `)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1:]
			}
		}
	}()
	var base, token string
	select {
	case m := <-found:
		base, token = m[0], m[1]
	case <-time.After(time.Minute):
		t.Fatal("serve --web printed no playground URL")
	}
	b, err := os.ReadFile(filepath.Join(dir, websession.TokenFile))
	if err != nil || strings.TrimSpace(string(b)) != token {
		t.Fatalf("token file %q %v, printed %q", b, err, token)
	}
	if st, _ := os.Stat(filepath.Join(dir, websession.TokenFile)); st.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v", st.Mode())
	}
	if resp, err := http.Get(base + "/web/health"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %v %v", resp, err)
	}
	for tok, want := range map[string]int{token: 200, "": 401, strings.Repeat("0", 64): 401} {
		req, _ := http.NewRequest("POST", base+"/web/rpc", strings.NewReader(`{"id":1,"method":"models.list"}`))
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != want {
			t.Fatalf("rpc with token %q: %v %v, want %d", tok, resp, err, want)
		}
		resp.Body.Close()
	}

	bad := exec.Command(os.Args[0], "serve", "--port", "0", "--data-dir", t.TempDir(), "--web", "0.0.0.0:8454")
	bad.Env = append(os.Environ(), cliEnv+"=1")
	out, err := bad.CombinedOutput()
	code := -1
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != 2 || !strings.Contains(string(out), "loopback only") {
		t.Fatalf("--web 0.0.0.0: exit %d (%v): %s", code, err, out)
	}
}

// TestWebFlagNetworkAddressInProcess is the same refusal without a process: serve fails before
// any model loads.
func TestWebFlagNetworkAddressInProcess(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:8454", ":8454"} {
		cfg := DefaultConfig()
		cfg.Web = addr
		if l, err := listenWeb(cfg); err == nil {
			l.Close()
			t.Fatalf("%s accepted", addr)
		} else if _, ok := err.(*UsageError); !ok {
			t.Fatalf("%s: %T %v, want a usage error", addr, err, err)
		}
	}
}

const chromium = "/usr/bin/chromium"

// startWebApp is a real App (the test model, loaded, and the random tiny model for long
// replies when ../shared/models has it) with --web on a free loopback port.
func startWebApp(t *testing.T) (*App, *webServer, string) {
	t.Helper()
	return startWebAppWith(t, func(*Config) {})
}

// startWebAppWith is startWebApp with the config changed by change first.
func startWebAppWith(t *testing.T, change func(*Config)) (*App, *webServer, string) {
	t.Helper()
	cfg := testConfig(t, testModel)
	cfg.Web = "127.0.0.1:0"
	change(&cfg)
	wl, err := listenWeb(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := startServer(t, cfg, true)
	long := ""
	if p := filepath.Join("..", "..", "shared", "models", "llama-2-tiny-random.gguf"); fileExists(p) {
		e, err := a.mgr.Catalog().AddLocal(context.Background(), p, "")
		if err != nil {
			t.Fatal(err)
		}
		long = e.ID
	}
	c := newController(a)
	t.Cleanup(func() { c.Close() })
	web, err := a.startWeb(wl, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { web.Close() })
	return a, web, long
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestWebPlaygroundInChromium drives the playground page in headless Chromium over a real
// server and model: pick and load the model, send a message and see the reply stream in and
// its tokens/s, stop a long reply mid-stream, then reopen the saved conversation.
func TestWebPlaygroundInChromium(t *testing.T) {
	if !fileExists(chromium) {
		t.Skipf("no Chromium at %s", chromium)
	}
	a, web, long := startWebApp(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.WindowSize(1100, 800))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	defer cancelTimeout()
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	eval := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(css(sel)))
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		return v
	}
	// setField replaces an input's value (SetValue does not fire input events; none are needed).
	setField := func(sel, v string) chromedp.Action[chromedp.Void] { return chromedp.SetValue(css(sel), v) }
	model := modelID(testModel)

	do("open the page", chromedp.Navigate(web.URL), chromedp.WaitVisible(css(`body[data-ready="1"]`)))
	if h := eval(`location.hash`); h != "" {
		t.Fatalf("the token stayed in the address bar: %q", h)
	}
	if mode := eval(`document.body.dataset.transport`); mode != "ws" {
		t.Fatalf("transport %q, want the WebSocket", mode)
	}
	do("pick the model", setField(`#model`, model), chromedp.Evaluate[chromedp.Void](`document.getElementById("model").dispatchEvent(new Event("change"))`))
	if eval(`document.body.dataset.modelState`) != "loaded" {
		do("load", chromedp.Click(css(`#load`)))
	}
	do("loaded", chromedp.WaitVisible(css(`body[data-model-state="loaded"]`)))

	// A reply streams in: the page's observer records the reply's length at each change.
	do("send", chromedp.Evaluate[chromedp.Void](`document.querySelector("details#opts").open = true`),
		setField(`#temperature`, "0"), setField(`#max_tokens`, "48"), setField(`#system`, "You tell stories."),
		chromedp.Evaluate[chromedp.Void](`window.__lens = []; new MutationObserver(() => {
			const b = document.querySelector(".msg.assistant:last-child .body"); if (b) window.__lens.push(b.textContent.length);
		}).observe(document.getElementById("messages"), {subtree: true, childList: true, characterData: true})`),
		chromedp.SendKeys(css(`#input`), "Once upon a time, there was a little dog"),
		chromedp.Click(css(`#send`)),
		chromedp.WaitNotPresent(css(`.msg.assistant.streaming`)),
		chromedp.WaitVisible(css(`#convs li`)))
	reply, stats := text(`.msg.assistant .body`), text(`#stats`)
	if reply == "" || !strings.Contains(stats, "tokens/s") || !strings.Contains(stats, "cached prompt tokens") {
		t.Fatalf("reply %q stats %q", reply, stats)
	}
	lens := eval(`window.__lens.join(",")`)
	t.Logf("reply %q; %s; lengths seen %s", reply, stats, lens)
	if eval(`String(window.__lens.length > 0 && window.__lens[window.__lens.length-1] > 0)`) != "true" {
		t.Fatalf("no streamed text seen: %s", lens)
	}
	shoot(t, ctx, "web-playground", false)

	// A second turn: the conversation's prompt comes from the cache.
	do("second turn", chromedp.SendKeys(css(`#input`), "What did the dog do next?"), chromedp.Click(css(`#send`)),
		chromedp.WaitVisible(css(`.msg.assistant:nth-of-type(4)`)), chromedp.WaitNotPresent(css(`.msg.assistant.streaming`)))
	if stats := text(`#stats`); !regexp.MustCompile(`· [1-9]\d* cached prompt tokens`).MatchString(stats) {
		t.Fatalf("second turn's stats %q: want cached prompt tokens", stats)
	}

	// Stop a long reply mid-stream: once the text has grown twice, press Stop.
	if long != "" {
		do("a long reply", chromedp.Click(css(`#new`)), chromedp.WaitNotPresent(css(`.msg`)),
			setField(`#model`, long), chromedp.Evaluate[chromedp.Void](`document.getElementById("model").dispatchEvent(new Event("change"))`),
			setField(`#max_tokens`, "400"), setField(`#temperature`, "1"),
			chromedp.Evaluate[chromedp.Void](`window.__grew = []; new MutationObserver(() => {
				const b = document.querySelector(".msg.assistant.streaming .body"); if (!b) return;
				const n = b.textContent.length; if (n > 0 && window.__grew[window.__grew.length-1] !== n) window.__grew.push(n);
				if (window.__grew.length === 2) document.getElementById("stop").click();
			}).observe(document.getElementById("messages"), {subtree: true, childList: true, characterData: true})`),
			chromedp.SendKeys(css(`#input`), "Write a very long story."),
			chromedp.Click(css(`#send`)),
			chromedp.WaitNotPresent(css(`.msg.assistant.streaming`)))
		if stats := text(`#stats`); stats != "Stopped." {
			t.Fatalf("after Stop: %q (lengths %s)", stats, eval(`window.__grew.join(",")`))
		}
		t.Logf("stopped after lengths %s; reply length %s", eval(`window.__grew.join(",")`), eval(`String(document.querySelector(".msg.assistant .body").textContent.length)`))
		// The generation itself stopped: its record says the client went away, short of 400 tokens.
		var rec *store.RequestRecord
		for deadline := time.Now().Add(10 * time.Second); rec == nil && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			recs, err := a.Store().RecentRequests(context.Background(), 10)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if r.Model == long && r.Endpoint == "playground" {
					rec = &r
					break
				}
			}
		}
		if rec == nil || !rec.ClientDisconnected || rec.CompletionTokens >= 400 {
			t.Fatalf("the stopped reply's record: %+v", rec)
		}
		t.Logf("stopped generation: %d tokens, finish %q, error %q", rec.CompletionTokens, rec.FinishReason, rec.Error)
	} else {
		t.Log("Stop mid-stream not checked: it needs ../shared/models/llama-2-tiny-random.gguf, whose replies run long enough to stop")
	}

	// Saved conversations: reopen the first one (its title is the first question).
	do("reopen", chromedp.Click(css(`#new`)), chromedp.WaitNotPresent(css(`.msg`)),
		// The list is redrawn when a save lands, which can retire a node between a query and
		// its click; a click from inside the page queries and clicks in one step.
		chromedp.Poll[chromedp.Void](`(() => { const b = document.querySelector('#convs li button.open[title^="Once upon a time"]'); if (!b) return false; b.click(); return true })()`),
		chromedp.WaitVisible(css(`.msg.assistant:nth-of-type(4)`)))
	if got := text(`.msg.assistant .body`); got != reply {
		t.Fatalf("reopened reply %q, want %q", got, reply)
	}
	if sys := eval(`document.getElementById("system").value`); sys != "You tell stories." {
		t.Fatalf("reopened system prompt %q", sys)
	}
	if n := eval(`String(document.querySelectorAll("#convs li").length)`); n != strconv.Itoa(1+btoi(long != "")) {
		t.Fatalf("%s saved conversations", n)
	}
	shoot(t, ctx, "web-playground-saved", false)
	shoot(t, ctx, "web-playground-phone", true)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
