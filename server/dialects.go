package server

import (
	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/server/anthropic"
	"github.com/superfluid/superfluid/server/dialect"
	"github.com/superfluid/superfluid/server/ollama"
	"github.com/superfluid/superfluid/server/openai"
	"github.com/superfluid/superfluid/server/web"
)

// dialects is the one table that chooses the error shape of whatever the router answers
// itself: the guard's and the policies' refusals, unknown routes and methods, panics, and the
// keys and usage routes. The first dialect owning a request's path renders its error; OpenAI
// owns every path (its shape is the house default), so it comes last. The web API's entry
// counts only on a router serving it (team mode, servesWeb): elsewhere its /api paths stay
// Ollama's.
var dialects = []dialect.Dialect{web.Dialect, anthropic.Dialect, ollama.Dialect, openai.Dialect}

// servesWebKey marks, in gin's context, a request to a router that serves the web API.
const servesWebKey = "server.serves_web"

// dialectOf is the dialect answering a request to path: the first in the table that owns it,
// else the last; the web API's only when withWeb.
func dialectOf(path string, withWeb bool) dialect.Dialect {
	for _, d := range dialects {
		if d.Name == web.Dialect.Name && !withWeb {
			continue
		}
		if d.Owns(path) {
			return d
		}
	}
	return dialects[len(dialects)-1]
}

// writeError renders err (a *dialect.Refusal, or an error of the dialect owning the path) in
// the shape of the dialect the request's path belongs to.
func writeError(c *gin.Context, err error) {
	dialectOf(c.Request.URL.Path, servesWeb(c)).WriteError(c, err)
}

// servesWeb reports whether c's router serves the web API (and so owns its paths).
func servesWeb(c *gin.Context) bool { return c.GetBool(servesWebKey) }

// markWeb marks every request of a router serving the web API.
func markWeb(c *gin.Context) { c.Set(servesWebKey, true) }
