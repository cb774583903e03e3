package app

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/superfluid/superfluid/app/browsertest"
	"github.com/superfluid/superfluid/runtime/models/hf/hftest"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/servertest"
)

// webTeam is a team-mode App behind real HTTP with the people the page tests sign in as: the
// admin "root" and the member "alice" (passwords in webPasswords), root's key, and one local
// lane "main" serving the test model.
type webTeam struct {
	app     *App
	srv     *httptest.Server
	model   string
	rootKey string
	// aliceKey is alice's key (she holds the lane once her booking is approved).
	aliceKey string
}

var webPasswords = map[string]string{"root": "root-password-1", "alice": "alice-password-1"}

func startWebTeam(t *testing.T, configure func(*Config)) *webTeam {
	t.Helper()
	cfg := testConfig(t, testModel)
	cfg.Team = true
	// The runtime log, as serve --team installs it (the live log page follows it).
	t.Cleanup(installRuntimeLog(&cfg, io.Discard, false))
	if configure != nil {
		configure(&cfg)
	}
	a, srv := startServer(t, cfg, false)
	ctx := context.Background()
	for _, np := range []people.NewPerson{
		{Name: "root", Password: webPasswords["root"], Role: people.RoleAdmin},
		{Name: "alice", Password: webPasswords["alice"]},
	} {
		if _, err := a.people.Create(ctx, people.CLI, np); err != nil {
			t.Fatalf("add %s: %v", np.Name, err)
		}
	}
	key, _, err := a.Keys().Create(ctx, auth.NewKey{Name: "root-key", Person: "root"})
	if err != nil {
		t.Fatal(err)
	}
	aliceKey, _, err := a.Keys().Create(ctx, auth.NewKey{Name: "alice-key", Person: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	w := &webTeam{app: a, srv: srv, model: a.preload.ID, rootKey: key, aliceKey: aliceKey}
	do := teamCaller(t, srv.URL, map[string]string{"root": key})
	addLanes(t, do, map[string]string{"main": w.model},
		`{"name": "main", "device": "cpu", "engine": "local", "model": "`+w.model+`"}`)
	return w
}

// pullHub is a Hub holding one small model, tester/tiny-GGUF:Q8_0 (file tiny-Q8_0.gguf), and
// the file's size.
func pullHub(t *testing.T) (*hftest.Server, int64) {
	t.Helper()
	hub := hftest.New()
	t.Cleanup(hub.Close)
	data, err := os.ReadFile(writeModels(t, t.TempDir(), 1)[0])
	if err != nil {
		t.Fatal(err)
	}
	hub.AddFile("tester/tiny-GGUF", "tiny-Q8_0.gguf", data)
	return hub, int64(len(data))
}

// call sends a request with root's key.
func (w *webTeam) call(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	return w.callWith(t, w.rootKey, method, path, body)
}

func (w *webTeam) callWith(t *testing.T, key, method, path, body string) (int, string) {
	t.Helper()
	resp, b := servertest.Do(t, method, w.srv.URL+path, body, "Authorization", "Bearer "+key, "Content-Type", "application/json")
	return resp.StatusCode, string(b)
}

// pages drives the pages in a real Chromium.
type pages struct {
	*browsertest.Browser
	t    *testing.T
	base string
	// passwords are the people's passwords as the test changes them.
	passwords map[string]string
}

func openPages(t *testing.T, w *webTeam, width, height int) *pages {
	b := browsertest.Start(t, width, height)
	p := &pages{Browser: b, t: t, base: w.srv.URL, passwords: maps.Clone(webPasswords)}
	p.Do("open /ui/", chromedp.Navigate(w.srv.URL+"/ui/"))
	p.WaitFor("the sign-in form", "document.querySelector('#signin')", 30*time.Second)
	return p
}

// js quotes s for a JavaScript expression.
func js(s string) string { return fmt.Sprintf("%q", s) }

// fill sets an input's value as typing would (an input event follows).
func (p *pages) fill(selector, value string) {
	p.t.Helper()
	p.Do("fill "+selector, chromedp.SetValue(chromedp.CSS(selector), value))
}

func (p *pages) click(selector string) {
	p.t.Helper()
	p.WaitFor(selector+" to be there", "document.querySelector("+js(selector)+")", 20*time.Second)
	p.Do("click "+selector, chromedp.Click(chromedp.CSS(selector)))
}

// signIn signs in through the form and waits for the shell.
func (p *pages) signIn(name string) {
	p.t.Helper()
	p.tryPassword(name, p.passwords[name])
	p.WaitText("#who-name", name, 20*time.Second)
}

// tryPassword submits the sign-in form.
func (p *pages) tryPassword(name, password string) {
	p.t.Helper()
	p.WaitFor("the sign-in form", "document.querySelector('#signin')", 20*time.Second)
	p.fill("#signin-name", name)
	p.fill("#signin-password", password)
	p.click("#signin button[type=submit]")
}

func (p *pages) signOut() {
	p.t.Helper()
	p.click("#logout")
	p.WaitFor("the sign-in form", "document.querySelector('#signin')", 20*time.Second)
}

// open goes to a page (#/lanes, ...) and waits until nothing on it is still loading.
func (p *pages) open(hash, title string) {
	p.t.Helper()
	_ = browsertest.Eval[string](p.Browser, "location.hash = "+js(hash))
	p.WaitText("#main h1", title, 20*time.Second)
	p.settle()
}

// settle waits until no section of the page says Loading….
func (p *pages) settle() {
	p.t.Helper()
	p.WaitFor("the page to load", "!(document.querySelector('#main')?.textContent ?? 'Loading…').includes('Loading…')", 20*time.Second)
}

// bodyText is the text the page shows.
func (p *pages) bodyText() string {
	p.t.Helper()
	return browsertest.Eval[string](p.Browser, "document.body.innerText")
}

// localTime is t as an <input type=datetime-local> value in the browser's time zone.
func (p *pages) localTime(at time.Time) string {
	p.t.Helper()
	return browsertest.Eval[string](p.Browser, fmt.Sprintf(`(() => { const d = new Date(%d); const z = n => String(n).padStart(2, '0');
		return d.getFullYear() + '-' + z(d.getMonth() + 1) + '-' + z(d.getDate()) + 'T' + z(d.getHours()) + ':' + z(d.getMinutes()); })()`, at.UnixMilli()))
}

// mustNotContain fails when the page shows s.
func (p *pages) mustNotContain(what, s string) {
	p.t.Helper()
	if strings.Contains(p.bodyText(), s) {
		p.t.Fatalf("the page still shows %s", what)
	}
}
