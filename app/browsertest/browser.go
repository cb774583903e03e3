// Package browsertest drives a real headless Chromium (Debian's chromium package at
// /usr/bin/chromium, through github.com/chromedp/chromedp) for the tests of the web pages.
//
// A test calls Start: without Chromium it skips, saying why (make test installs it). Every
// console error, uncaught exception, failed page resource (a script, a style sheet, an image)
// and Content-Security-Policy violation the page reports fails the test when it ends; the
// pages' own fetches are not counted, since the pages show an API error themselves. Screenshot
// writes docs/screenshots/web-NAME.png only when SUPERFLUID_SCREENSHOTS=1.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// ChromiumPath is where Debian's chromium package puts the browser.
const ChromiumPath = "/usr/bin/chromium"

// ScreenshotsEnv names the environment variable that turns screenshots on ("1").
const ScreenshotsEnv = "SUPERFLUID_SCREENSHOTS"

// Browser is one headless Chromium with one tab, closed when the test ends.
type Browser struct {
	t *testing.T
	// Ctx is the tab's chromedp context, for actions the helpers here do not cover.
	Ctx context.Context

	mu       sync.Mutex
	problems []string
	// kinds maps a request to its resource type: a failed fetch is the page's business, a
	// failed script is a broken page.
	kinds map[network.RequestID]network.ResourceType
}

// Start launches Chromium with a window of width × height CSS pixels, or skips the test when
// Chromium is not installed.
func Start(t *testing.T, width, height int) *Browser {
	t.Helper()
	if _, err := os.Stat(ChromiumPath); err != nil {
		t.Skipf("chromium is not installed at %s (make test installs Debian's chromium package): %v", ChromiumPath, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(ChromiumPath),
		chromedp.WindowSize(width, height),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("font-render-hinting", "none"),
	)
	if os.Geteuid() == 0 {
		// Chromium refuses to run as root inside its sandbox.
		opts = append(opts, chromedp.NoSandbox)
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &Browser{t: t, kinds: map[network.RequestID]network.ResourceType{}}
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithListener(b.listen))
	b.Ctx = ctx
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), int64(height))); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(b.CheckConsole)
	return b
}

// listen runs in the tab's event loop: it only records.
func (b *Browser) listen(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		b.kinds[ev.RequestID] = ev.Type
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var parts []string
			for _, a := range ev.Args {
				if len(a.Value) > 0 {
					parts = append(parts, string(a.Value))
				} else {
					parts = append(parts, a.Description)
				}
			}
			b.problems = append(b.problems, "console."+string(ev.Type)+": "+strings.Join(parts, " "))
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		text := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			text += " " + d.Exception.Description
		}
		b.problems = append(b.problems, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber+1, text))
	case *log.EventEntryAdded:
		e := ev.Entry
		if e.Level != log.EntryLevelError {
			return
		}
		if e.Source == log.EntrySourceNetwork && e.NetworkRequestID != "" {
			switch b.kinds[e.NetworkRequestID] {
			case network.ResourceTypeFetch, network.ResourceTypeXHR, network.ResourceTypeEventSource:
				return // an API answer the page handles itself
			}
		}
		if strings.HasSuffix(e.URL, "/favicon.ico") {
			return // the browser's own guess, not something the page asked for
		}
		b.problems = append(b.problems, fmt.Sprintf("%s %s: %s %s", e.Source, e.Level, e.Text, e.URL))
	}
}

// ConsoleErrors returns the problems the page reported so far and forgets them.
func (b *Browser) ConsoleErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.problems
	b.problems = nil
	return p
}

// CheckConsole fails the test for each problem the page reported since the last check.
func (b *Browser) CheckConsole() {
	b.t.Helper()
	for _, p := range b.ConsoleErrors() {
		b.t.Errorf("browser: %s", p)
	}
}

// Do runs the actions in order, failing the test at the first error.
func (b *Browser) Do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v (page problems: %v)", what, err, b.ConsoleErrors())
	}
}

// Eval evaluates a JavaScript expression in the page and returns its value (a promise is
// awaited).
func Eval[T any](b *Browser, expression string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expression, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expression, err)
	}
	return v
}

// WaitFor waits until the JavaScript expression is truthy, failing the test after timeout
// with what: the expression is re-evaluated every 50 ms.
func (b *Browser) WaitFor(what, expression string, timeout time.Duration) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, timeout+5*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool]("!!("+expression+")",
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(timeout)))
	if err != nil {
		b.t.Fatalf("waiting for %s (%s): %v (page problems: %v)", what, expression, err, b.ConsoleErrors())
	}
}

// WaitText waits until the first element matching the CSS selector shows text containing want.
func (b *Browser) WaitText(selector, want string, timeout time.Duration) {
	b.t.Helper()
	b.WaitFor(fmt.Sprintf("%q in %s", want, selector),
		fmt.Sprintf("(document.querySelector(%q)?.textContent ?? '').includes(%q)", selector, want), timeout)
}

// Text returns the text content of the first element matching the CSS selector ("" when none).
func (b *Browser) Text(selector string) string {
	b.t.Helper()
	return Eval[string](b, fmt.Sprintf("document.querySelector(%q)?.textContent ?? ''", selector))
}

// Viewport changes the page's size in CSS pixels (a phone is 390 × 844).
func (b *Browser) Viewport(width, height int) {
	b.t.Helper()
	b.Do("set the viewport", chromedp.EmulateViewport(int64(width), int64(height)))
}

// ScreenshotsOn reports whether screenshots are asked for (SUPERFLUID_SCREENSHOTS=1).
func ScreenshotsOn() bool { return os.Getenv(ScreenshotsEnv) == "1" }

// Screenshot writes the whole page as docs/screenshots/web-NAME.png of the repository when
// screenshots are on, and returns the path written ("" when off).
func (b *Browser) Screenshot(name string) string {
	b.t.Helper()
	if !ScreenshotsOn() {
		return ""
	}
	root, err := repoRoot()
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	ctx, cancel := context.WithTimeout(b.Ctx, time.Minute)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(root, "docs", "screenshots", "web-"+name+".png")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	b.t.Logf("wrote %s", path)
	return path
}

// repoRoot is the folder above the working directory that holds go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}
