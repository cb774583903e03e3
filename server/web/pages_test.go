package web_test

import (
	"io/fs"
	"net/http"
	"path"
	"regexp"
	"strings"
	"testing"

	webassets "github.com/superfluid/superfluid/assets/web"
	"github.com/superfluid/superfluid/server/web"
)

// pageFiles lists the embedded page files (not the Go source).
func pageFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := fs.WalkDir(webassets.Files(), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if err != nil || len(files) < 10 {
		t.Fatalf("embedded pages: %v, %d files", err, len(files))
	}
	return files
}

func TestPagesAreServedWithTypesAndPolicy(t *testing.T) {
	tt := newTestTeam(t)
	want := map[string]string{".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
		".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
	for _, f := range append(pageFiles(t), "") {
		res := send(t, "GET", tt.URL+"/ui/"+f, "", http.Header{})
		ext := path.Ext(f)
		if f == "" {
			ext = ".html"
		}
		if res.status != 200 || res.header.Get("Content-Type") != want[ext] {
			t.Errorf("/ui/%s: %d %q, want 200 %q", f, res.status, res.header.Get("Content-Type"), want[ext])
		}
		if got := res.header.Get("Content-Security-Policy"); got != web.PagesCSP {
			t.Errorf("/ui/%s: CSP %q", f, got)
		}
		if res.header.Get("X-Content-Type-Options") != "nosniff" || res.header.Get("Cache-Control") != "no-cache" {
			t.Errorf("/ui/%s: nosniff %q, cache %q", f, res.header.Get("X-Content-Type-Options"), res.header.Get("Cache-Control"))
		}
		etag := res.header.Get("ETag")
		again := send(t, "GET", tt.URL+"/ui/"+f, "", http.Header{"If-None-Match": {etag}})
		if etag == "" || again.status != http.StatusNotModified || len(again.body) != 0 {
			t.Errorf("/ui/%s with If-None-Match %s: %d (%d bytes), want 304 and no body", f, etag, again.status, len(again.body))
		}
	}
	index := send(t, "GET", tt.URL+"/ui/", "", http.Header{})
	if !strings.Contains(string(index.body), `<script type="module" src="js/main.js">`) {
		t.Errorf("/ui/ is not the app's index: %.200s", index.body)
	}
	if head := send(t, "HEAD", tt.URL+"/ui/app.css", "", http.Header{}); head.status != 200 || len(head.body) != 0 {
		t.Errorf("HEAD /ui/app.css: %d, %d bytes", head.status, len(head.body))
	}
}

func TestPagesRefusalsAndRedirect(t *testing.T) {
	tt := newTestTeam(t)
	for _, p := range []string{"/ui/nope.js", "/ui/js/", "/ui/js/pages/../../web.go", "/ui/web.go"} {
		res := send(t, "GET", tt.URL+p, "", http.Header{})
		if res.status != 404 || res.code() != "not_found" || res.header.Get("Content-Security-Policy") == "" {
			t.Errorf("GET %s: %d %s (CSP %q), want 404 not_found in the web shape", p, res.status, res.body, res.header.Get("Content-Security-Policy"))
		}
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(tt.URL + "/ui")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/ui/" {
		t.Errorf("GET /ui: %d Location %q, want 301 /ui/", resp.StatusCode, resp.Header.Get("Location"))
	}
	// A link from another site opens the sign-in page: the pages are the same static files for
	// everyone; the API behind them refuses cross-site requests.
	res := send(t, "GET", tt.URL+"/ui/", "", http.Header{"Sec-Fetch-Site": {"cross-site"}, "Sec-Fetch-Mode": {"navigate"}})
	if res.status != 200 {
		t.Errorf("a cross-site navigation to /ui/: %d %s", res.status, res.body)
	}
	if res := send(t, "GET", tt.URL+"/api/auth/me", "", http.Header{"Sec-Fetch-Site": {"cross-site"}}); res.code() != "cross_origin" {
		t.Errorf("a cross-site /api/auth/me: %d %s, want cross_origin", res.status, res.body)
	}
}

// TestPagesScriptsResolveAndNeverParseHTML checks the pages statically: every import and every
// file index.html names is embedded (a typo would be a blank page), and no script turns data
// into markup (innerHTML and friends), inlines script, or evaluates strings: names, log lines
// and model names come from users.
func TestPagesScriptsResolveAndNeverParseHTML(t *testing.T) {
	fsys := webassets.Files()
	have := map[string]bool{}
	for _, f := range pageFiles(t) {
		have[f] = true
	}
	imports := regexp.MustCompile(`(?m)^\s*import\s[^;]*?from\s+'([^']+)'|(?:src|href)="([^"#:]+)"`)
	banned := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function\(|setAttribute\(\s*'on|setAttribute\(\s*'style'`)
	for f := range have {
		ext := path.Ext(f)
		if ext != ".js" && ext != ".html" {
			continue
		}
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			t.Fatal(err)
		}
		src := string(data)
		for _, m := range imports.FindAllStringSubmatch(src, -1) {
			ref := m[1] + m[2]
			if ext == ".js" && m[2] != "" {
				continue // an href written by a script is an API address, not a file
			}
			if strings.HasPrefix(ref, "/") {
				continue
			}
			if target := path.Join(path.Dir(f), ref); !have[target] {
				t.Errorf("%s names %q, which is not embedded (%s)", f, ref, target)
			}
		}
		if loc := banned.FindStringIndex(src); loc != nil {
			t.Errorf("%s uses %q: put data on the page as text only", f, src[loc[0]:loc[1]])
		}
		if ext == ".html" && regexp.MustCompile(`<script(?:\s+type="module")?>|\son[a-z]+=`).MatchString(src) {
			t.Errorf("%s has inline script, which the CSP refuses", f)
		}
	}
}

// TestOwnsTheSubpathsOfItsPrefixes: the web API owns what lies under its prefixes (the
// pages call /api/catalog/pulls, /api/keys/ID, /api/bookings/ID/cancel with a cookie only, so
// the guard must not ask them for a key) and nothing that merely starts with the same letters
// (Ollama's /api/* stay Ollama's).
func TestOwnsTheSubpathsOfItsPrefixes(t *testing.T) {
	for path, want := range map[string]bool{
		"/api/catalog": true, "/api/catalog/pulls": true, "/api/catalog/pulls/pull-1": true,
		"/api/keys/key-1": true, "/api/bookings/b-1/cancel": true, "/api/profile/password": true,
		"/api/storage": true, "/api/openapi.json": true, "/ui": true, "/ui/js/main.js": true,
		"/api/keysmith": false, "/api/catalogs": false, "/api/tags": false, "/api/chat": false, "/api/pull": false, "/": false,
	} {
		if got := web.Owns(path); got != want {
			t.Errorf("Owns(%q) = %v, want %v", path, got, want)
		}
	}
	tt := newTestTeam(t)
	b := tt.signIn(t, "bob", "password1")
	if res := b.do("GET", "/api/catalog/pulls", ""); res.status != 200 {
		t.Errorf("GET /api/catalog/pulls with a session: %d %s", res.status, res.body)
	}
}
