package web

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/gin-gonic/gin"

	webassets "github.com/superfluid/superfluid/assets/web"
)

// PagesCSP is the Content-Security-Policy of every page file: scripts, styles, images and
// fetches from this origin only, no inline script or style, no plugins, no framing.
const PagesCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// pageFile is one embedded file, read once: its bytes, type and ETag.
type pageFile struct {
	body        []byte
	contentType string
	etag        string
}

// pageTypes are the content types of the files the pages ship (the system's MIME table is not
// relied on: a machine without /etc/mime.types would serve JavaScript as text/plain, which a
// module script refuses).
var pageTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".json": "application/json",
}

// loadPages reads every embedded page file into memory.
func loadPages(fsys fs.FS) (map[string]pageFile, error) {
	files := map[string]pageFile{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".go") {
			return err
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		ct, ok := pageTypes[path.Ext(p)]
		if !ok {
			ct = mime.TypeByExtension(path.Ext(p))
		}
		if ct == "" {
			ct = "application/octet-stream"
		}
		sum := sha256.Sum256(body)
		files[p] = pageFile{body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	return files, err
}

// pageRoutes serves the embedded single-page app at /ui/ (GET and HEAD): /ui/ is index.html,
// /ui/FILE the file, anything else 404 in the web error shape; /ui redirects to /ui/. Every
// answer carries PagesCSP and nosniff. The files' names carry no version, so caches must
// revalidate each time ("no-cache"); the ETag makes that a 304 when nothing changed.
//
// The pages skip the API's checks on purpose: they are the same static files for everyone
// (what they show comes from /api, which checks), and a link to /ui/ from another site is a
// cross-site navigation that must open the sign-in page, not a cross_origin refusal.
func (a *API) pageRoutes() {
	files, err := loadPages(webassets.Files())
	if err != nil {
		// The files are embedded in the binary: failing to read them is a build fault.
		panic("web: read the embedded pages: " + err.Error())
	}
	redirect := func(c *gin.Context) { c.Redirect(http.StatusMovedPermanently, "/ui/") }
	serve := func(c *gin.Context) { servePage(c, files) }
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		a.add(&op{method: method, path: "/ui", meta: Meta{Hidden: true}, handler: redirect})
		a.add(&op{method: method, path: "/ui/*file", meta: Meta{Hidden: true}, handler: serve})
	}
}

func servePage(c *gin.Context, files map[string]pageFile) {
	h := c.Writer.Header()
	h.Set("Content-Security-Policy", PagesCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	name := strings.TrimPrefix(c.Param("file"), "/")
	if name == "" {
		name = "index.html"
	}
	f, ok := files[name]
	if !ok || strings.HasSuffix(name, "/") {
		WriteError(c, Errorf(http.StatusNotFound, "not_found", "", "no page at /ui/%s; the pages start at /ui/", name))
		return
	}
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", f.etag)
	if match := c.GetHeader("If-None-Match"); match != "" && etagMatches(match, f.etag) {
		c.Status(http.StatusNotModified)
		return
	}
	c.Data(http.StatusOK, f.contentType, f.body)
}

// etagMatches reports whether an If-None-Match header names etag (or is "*").
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(t), "W/"))
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}
