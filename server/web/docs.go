package web

import (
	"bytes"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	swaggerFiles "github.com/swaggo/files/v2"
)

// docsInitializer replaces swagger-ui's own, which points at the petstore: the viewer loads
// this server's document and nothing from elsewhere.
const docsInitializer = `window.onload = function() {
  window.ui = SwaggerUIBundle({
    url: "/api/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    withCredentials: true,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: "StandaloneLayout",
    requestInterceptor: function(req) {
      var t = sessionStorage.getItem("sf_csrf");
      if (t) { req.headers["X-CSRF-Token"] = t; }
      return req;
    }
  });
};
`

// docRoutes serves the OpenAPI document and the viewer (swagger-ui, embedded by
// github.com/swaggo/files/v2).
func (a *API) docRoutes() {
	Raw(a, http.MethodGet, "/api/openapi.json", Meta{Summary: "The OpenAPI 3.1 document of this API", Tag: "docs", Produces: "application/json"},
		func(r *Request[NoBody]) error {
			doc, err := a.OpenAPI()
			if err != nil {
				return err
			}
			r.Gin.Data(http.StatusOK, "application/json", doc)
			return nil
		})
	Raw(a, http.MethodGet, "/api/docs", Meta{Summary: "The interactive reference (swagger-ui)", Tag: "docs", Produces: "text/html"},
		func(r *Request[NoBody]) error {
			r.Gin.Redirect(http.StatusFound, "/api/docs/index.html")
			return nil
		})
	Raw(a, http.MethodGet, "/api/docs/*file", Meta{Hidden: true}, func(r *Request[NoBody]) error {
		// The viewer runs requests with the caller's cookie: no framing by other sites, no
		// sniffing (rev20b). Scripts are not restricted further: swagger-ui sets inline styles.
		h := r.Gin.Writer.Header()
		h.Set("Content-Security-Policy", DocsCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		name := strings.TrimPrefix(path.Clean(r.Gin.Param("file")), "/")
		if name == "" || name == "." {
			name = "index.html"
		}
		if name == "swagger-initializer.js" {
			r.Gin.Data(http.StatusOK, "text/javascript; charset=utf-8", []byte(docsInitializer))
			return nil
		}
		data, err := fs.ReadFile(swaggerFiles.FS, name)
		if err != nil {
			return Errorf(http.StatusNotFound, "not_found", "", "no such file in the viewer: %s", name)
		}
		r.Gin.Header("Cache-Control", "no-cache")
		http.ServeContent(r.Gin.Writer, r.Gin.Request, name, docsModTime, bytes.NewReader(data))
		return nil
	})
}

// DocsCSP is the viewer's Content-Security-Policy: nothing from another origin may frame it,
// no plugins, no <base> redirecting its scripts.
const DocsCSP = "frame-ancestors 'none'; object-src 'none'; base-uri 'none'; form-action 'self'"

// docsModTime is zero: the embedded files have no time, so none is sent.
var docsModTime time.Time
