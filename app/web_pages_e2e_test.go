package app

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/superfluid/superfluid/app/browsertest"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestWebPagesE2E drives SlotServe's pages in a real headless Chromium against the real App
// in team mode (bookings need approval) on the test model: a lockout shown with its wait, a
// member's booking approved by an admin and the lane's holder changing on the lanes page, a
// key shown once and gone after a reload, and every page of both roles loading with no console
// error (screenshots with SUPERFLUID_SCREENSHOTS=1, at laptop and phone width).
func TestWebPagesE2E(t *testing.T) {
	hub, size := pullHub(t)
	// The download stops halfway until the client's stall timeout resumes it, so the bar is
	// seen mid-way.
	hub.Faults("tester/tiny-GGUF", "tiny-Q8_0.gguf").StallAt.Store(size / 2)
	w := startWebTeam(t, func(cfg *Config) {
		cfg.BookingApproval = true
		cfg.HFEndpoint = hub.URL()
	})
	p := openPages(t, w, 1280, 860)

	t.Run("lockout", func(t *testing.T) {
		p.t = t
		// Nine failures for the account straight over HTTP, the tenth through the form: wrong.
		for range 9 {
			resp, body := servertest.Do(t, "POST", w.srv.URL+"/api/auth/login", `{"name": "mallory", "password": "guess"}`, "Content-Type", "application/json")
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("a wrong password: %d %s", resp.StatusCode, body)
			}
		}
		p.tryPassword("mallory", "guess")
		p.WaitText("#signin .error", "Wrong name or password.", 20*time.Second)
		p.Screenshot("signin")
		// The eleventh is refused without a check, and the page says how long to wait.
		p.tryPassword("mallory", "guess")
		p.WaitText("#signin .error", "Too many failed sign-ins. Try again in 15 minutes.", 20*time.Second)
		p.Screenshot("signin-locked")
	})

	t.Run("booking approved", func(t *testing.T) {
		p.t = t
		p.signIn("alice")
		p.open("#/lanes", "Lanes")
		p.WaitText(`.lane[data-lane="main"] .badge`, "serving", 20*time.Second)
		if got := p.Text(`.lane[data-lane="main"] .lane-holder`); got != "free" {
			t.Fatalf("holder before any booking: %q", got)
		}
		p.open("#/bookings", "Bookings")
		p.WaitFor("the lane in the booking form", `[...document.querySelectorAll('#book-lane option')].some(o => o.value === 'main')`, 20*time.Second)
		p.click("#book-now")
		p.fill("#book-end", p.localTime(time.Now().Add(2*time.Hour)))
		p.click("#book button[type=submit]")
		p.WaitText("#my-bookings", "pending", 20*time.Second)
		p.WaitFor("the booking in the week view", "document.querySelector('.booking-pending')", 20*time.Second)
		p.Screenshot("bookings")
		p.signOut()

		p.signIn("root")
		p.open("#/bookings", "Bookings")
		p.WaitText("#pending", "alice", 20*time.Second)
		p.click("#pending [data-approve]")
		p.WaitText("#pending", "Nothing is waiting.", 20*time.Second)
		p.open("#/lanes", "Lanes")
		p.WaitText(`.lane[data-lane="main"] .lane-holder`, "alice until", 20*time.Second)
		p.Screenshot("lanes-booked")
	})

	t.Run("key shown once", func(t *testing.T) {
		p.t = t
		p.open("#/keys", "My keys")
		p.fill("#key-name", "laptop")
		p.click("#create-key button[type=submit]")
		p.WaitFor("the new key", "document.querySelector('#new-key-value')", 20*time.Second)
		key := p.Text("#new-key-value")
		if !strings.HasPrefix(key, "sk-") {
			t.Fatalf("the key shown: %q", key)
		}
		p.WaitText("#keys", "laptop", 20*time.Second)
		p.Screenshot("key-created")
		resp, body := servertest.Do(t, "GET", w.srv.URL+"/v1/models", "", "Authorization", "Bearer "+key)
		if resp.StatusCode != 200 {
			t.Fatalf("the key shown does not work: %d %s", resp.StatusCode, body)
		}
		p.Do("reload", chromedp.Reload())
		p.WaitText("#main h1", "My keys", 20*time.Second)
		p.settle()
		p.WaitText("#keys", "laptop", 20*time.Second)
		p.mustNotContain("the key after a reload", key)
		if n := browsertest.Eval[int](p.Browser, "document.querySelectorAll('#new-key').length"); n != 0 {
			t.Fatalf("the key box is back after a reload")
		}
		// Revoking asks once more on the button, then the key stops working.
		revoke := `#keys button[title="Revoke laptop"]`
		p.click(revoke)
		p.WaitText(revoke, "Confirm", 5*time.Second)
		p.click(revoke)
		p.WaitFor("the key gone from the list", `!document.querySelector('#keys').textContent.includes('laptop')`, 20*time.Second)
		if resp, _ := servertest.Do(t, "GET", w.srv.URL+"/v1/models", "", "Authorization", "Bearer "+key); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a revoked key: %d", resp.StatusCode)
		}
	})

	t.Run("live log", func(t *testing.T) {
		p.t = t
		p.signOut()
		p.signIn("root")
		p.open("#/admin/log", "Live log")
		p.WaitText("#log-state", "live", 20*time.Second)
		p.WaitFor("the recent lines", "document.querySelectorAll('#log-lines li').length > 0", 20*time.Second)
		before := browsertest.Eval[int](p.Browser, "document.querySelectorAll('#log-lines li').length")
		// Unloading and loading the lane's model by hand starts a new worker, whose llama.cpp
		// lines reach the page as they are written.
		for _, body := range []string{`{"action": "stop", "lane": "main"}`, `{"action": "start", "lane": "main"}`} {
			if code, out := w.call(t, "POST", "/api/admin/runtime/manual", body); code != 200 {
				t.Fatalf("manual %s: %d %s", body, code, out)
			}
		}
		p.WaitFor("a worker line written after the page opened",
			fmt.Sprintf("[...document.querySelectorAll('#log-lines li')].slice(%d).some(li => li.textContent.includes('source=worker'))", before), time.Minute)
		p.Screenshot("log")
		waitLanes(t, teamCaller(t, w.srv.URL, map[string]string{"root": w.rootKey}), map[string]string{"main": w.model})
	})

	t.Run("pull with progress", func(t *testing.T) {
		p.t = t
		p.open("#/catalog", "Catalog")
		p.fill("#pull-model", "hf.co/tester/tiny-GGUF:Q8_0")
		p.click("#pull button[type=submit]")
		bar := `document.querySelector('.pull[data-status] progress')`
		p.WaitFor("the bar mid-way", bar+` && `+bar+`.value > 0 && `+bar+`.value < `+bar+`.max`, time.Minute)
		p.Screenshot("catalog-pulling")
		p.WaitFor("the pull to finish", `document.querySelector('.pull')?.dataset.status === 'done'`, 2*time.Minute)
		if v := browsertest.Eval[bool](p.Browser, bar+`.value === `+bar+`.max`); !v {
			t.Fatalf("a finished pull's bar is not full")
		}
	})

	t.Run("storage and backups", func(t *testing.T) {
		p.t = t
		p.open("#/admin/storage", "Storage admin")
		p.click("#add-storage")
		p.fill(`#storage-form [name="name"]`, "scratch")
		p.fill(`#storage-form [name="path"]`, t.TempDir())
		p.click("#storage-form button[type=submit]")
		p.WaitText("#admin-storage", "scratch", 20*time.Second)
		p.click(`#admin-storage button[title="Check scratch"]`)
		p.WaitText("#admin-storage [data-check]", "ok", 20*time.Second)
		p.Screenshot("admin-storage-checked")
		p.click(`#admin-storage button[title="Usage of scratch"]`)
		p.WaitText("#admin-storage [data-check]", "files", 20*time.Second)
		p.open("#/admin/backups", "Backups")
		corrupt := filepath.Join(t.TempDir(), "corrupt.db")
		if err := os.WriteFile(corrupt, []byte("not a database at all"), 0o644); err != nil {
			t.Fatal(err)
		}
		p.Do("choose the file", chromedp.SetUploadFiles(chromedp.CSS("#restore-file"), []string{corrupt}))
		p.click("#restore button[type=submit]")
		p.WaitFor("the refusal", `document.querySelector('#restore .error')`, 20*time.Second)
		if msg := p.Text("#restore .error"); msg == "" || strings.Contains(msg, "answered 400") {
			t.Fatalf("the refusal of a corrupt backup says %q", msg)
		}
		p.Screenshot("backups-refused")
		if code, out := w.call(t, "GET", "/api/admin/users", ""); code != 200 || !strings.Contains(out, "alice") {
			t.Fatalf("after a refused restore: %d %s", code, out)
		}
	})

	t.Run("admin forms", func(t *testing.T) {
		p.t = t
		// A lane whose upstream refuses connections: added, shown with its state, removed.
		p.open("#/lanes", "Lanes")
		p.fill(`#add-lane [name="name"]`, "up")
		p.Do("choose the engine", chromedp.SetValue(chromedp.CSS(`#add-lane [name="engine"]`), "openai"))
		p.Do("choose the device", chromedp.SetValue(chromedp.CSS(`#add-lane [name="device"]`), "remote"))
		p.fill(`#add-lane [name="model"]`, "qwen")
		p.fill(`#add-lane [name="url"]`, "http://127.0.0.1:9/v1")
		p.click(`#add-lane button[type=submit]`)
		p.WaitFor("the new lane, or a refusal", `document.querySelector('.lane[data-lane="up"]') || document.querySelector('#add-lane .error')`, 20*time.Second)
		if msg := p.Text("#add-lane .error"); msg != "" {
			t.Fatalf("adding a lane: %s", msg)
		}
		remove := `.lane[data-lane="up"] button.danger`
		p.click(remove)
		p.WaitText(remove, "Confirm", 5*time.Second)
		p.click(remove)
		p.WaitFor("the lane gone", `!document.querySelector('.lane[data-lane="up"]')`, time.Minute)

		// A person added without a password gets one made up, shown once.
		p.open("#/admin/people", "People")
		p.fill(`#main form [name="name"]`, "bob")
		p.click("#main form button[type=submit]")
		p.WaitText("#main .secret", "Password for bob", 20*time.Second)
		p.WaitText("#people", "bob", 20*time.Second)

		// The approval policy, switched off and on again through the settings form.
		p.open("#/admin/settings", "Settings")
		p.click("#approval-required")
		p.click("#settings-form button[type=submit]")
		p.WaitText("#notices", "Settings saved", 20*time.Second)
		if code, out := w.call(t, "GET", "/api/admin/settings", ""); code != 200 || !strings.Contains(out, `"approval_required":false`) {
			t.Fatalf("settings after switching approval off: %d %s", code, out)
		}
		p.click("#approval-required")
		p.click("#settings-form button[type=submit]")
		p.WaitFor("the policy back on", `(() => { const x = new XMLHttpRequest(); x.open('GET', '/api/admin/settings', false); x.send(); return JSON.parse(x.responseText).approval_required; })()`, 20*time.Second)
	})

	t.Run("every page", func(t *testing.T) {
		p.t = t
		// Some traffic for the charts, the usage and the request log.
		for range 3 {
			if code, out := w.callWith(t, w.aliceKey, "POST", "/v1/chat/completions", `{"model": "`+w.model+`", "max_tokens": 4, "messages": [{"role": "user", "content": "Once upon a time"}]}`); code != 200 {
				t.Fatalf("chat: %d %s", code, out)
			}
		}
		for _, pg := range webPageList {
			p.open("#"+pg.hash, pg.title)
			time.Sleep(300 * time.Millisecond) // charts and polls draw once more
			if pg.hash != "/usage" {
				p.Screenshot(pg.shot)
			}
			p.CheckConsole()
		}
		p.Viewport(390, 844)
		for _, pg := range []webPage{{"/lanes", "Lanes", "lanes-phone"}, {"/bookings", "Bookings", "bookings-phone"}, {"/admin/stats", "Dashboard", "stats-phone"}} {
			p.open("#"+pg.hash, pg.title)
			time.Sleep(300 * time.Millisecond)
			p.Screenshot(pg.shot)
		}
		p.Viewport(1280, 860)
		p.signOut()
		p.signIn("alice")
		for _, pg := range webPageList {
			if strings.HasPrefix(pg.hash, "/admin/") {
				continue
			}
			p.open("#"+pg.hash, pg.title)
			if pg.hash == "/usage" { // alice made the requests
				p.WaitFor("the usage chart", "document.querySelector('#usage-charts .bar')", 20*time.Second)
				time.Sleep(300 * time.Millisecond)
				p.Screenshot(pg.shot)
			}
			p.CheckConsole()
		}
		if strings.Contains(p.bodyText(), "Dashboard") {
			t.Fatalf("a member sees the admin pages in the navigation")
		}
	})

	t.Run("password change", func(t *testing.T) {
		p.t = t
		p.open("#/profile", "Profile")
		p.fill(`#main [name="current_password"]`, p.passwords["alice"])
		p.fill(`#main [name="new_password"]`, "alice-password-2")
		p.click("#main form button[type=submit]")
		p.WaitText("#notices", "Password changed", 20*time.Second)
		// The change rotated the session: a write still goes through with the new token.
		p.open("#/keys", "My keys")
		p.fill("#key-name", "after-change")
		p.click("#create-key button[type=submit]")
		p.WaitFor("the new key", "document.querySelector('#new-key-value')", 20*time.Second)
		p.signOut()
		p.passwords["alice"] = "alice-password-2"
		p.signIn("alice")

		// Her booking, cancelled from her list: the lane is free again.
		p.open("#/bookings", "Bookings")
		cancel := "#my-bookings button.danger"
		p.click(cancel)
		p.WaitText(cancel, "Confirm", 5*time.Second)
		p.click(cancel)
		p.WaitFor("the cancellation, or its refusal", `document.querySelector('#notices')?.textContent.match(/Cancelled|error/i)`, 20*time.Second)
		if got := p.Text("#notices"); !strings.Contains(got, "Cancelled.") {
			t.Fatalf("cancel: %s", got)
		}
		p.open("#/lanes", "Lanes")
		p.WaitText(`.lane[data-lane="main"] .lane-holder`, "free", 20*time.Second)
	})
}

// webPage is one page of the app: its address, its title and its screenshot's name.
type webPage struct{ hash, title, shot string }

// webPageList is every page, as assets/web/js/pages/index.js lists them.
var webPageList = []webPage{
	{"/lanes", "Lanes", "lanes"},
	{"/bookings", "Bookings", "bookings-admin"},
	{"/catalog", "Catalog", "catalog"},
	{"/usage", "Usage", "usage"},
	{"/keys", "My keys", "keys"},
	{"/storage", "Storage", "storage"},
	{"/profile", "Profile", "profile"},
	{"/admin/stats", "Dashboard", "stats"},
	{"/admin/people", "People", "people"},
	{"/admin/keys", "All keys", "admin-keys"},
	{"/admin/requests", "Request log", "requests"},
	{"/admin/log", "Live log", "log"},
	{"/admin/runtime", "Runtime", "runtime"},
	{"/admin/storage", "Storage admin", "admin-storage"},
	{"/admin/settings", "Settings", "settings"},
	{"/admin/backups", "Backups", "backups"},
	{"/admin/audit", "Audit", "audit"},
}
