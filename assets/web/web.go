// Package web holds SlotServe's browser pages (the admin and user single-page app), embedded in
// the binary: plain HTML, CSS and JavaScript modules in this folder, with no build step and
// nothing fetched from another origin. server/web serves them at /ui/.
//
// The pages are a client of the /api JSON routes, like any script: they sign in with a cookie
// session, send the session's CSRF token as X-CSRF-Token on every write, and put data on the
// page only as text (element.textContent, never innerHTML), since names, log lines and model
// names come from users.
package web

import (
	"embed"
	"io/fs"
)

//go:embed index.html app.css icon.svg js
var files embed.FS

// Files returns the pages' files, index.html at the root.
func Files() fs.FS { return files }
