package server

import (
	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/server/anthropic"
	"github.com/superfluid/superfluid/server/dialect"
	"github.com/superfluid/superfluid/server/ollama"
	"github.com/superfluid/superfluid/server/openai"
)

// dialects is the one table that chooses the error shape of whatever the router answers
// itself: the guard's and the policies' refusals, unknown routes and methods, panics, and the
// keys and usage routes. The first dialect owning a request's path renders its error; OpenAI
// owns every path (its shape is the house default), so it comes last.
var dialects = []dialect.Dialect{anthropic.Dialect, ollama.Dialect, openai.Dialect}

// dialectOf is the dialect answering a request to path: the first in the table that owns it,
// else the last.
func dialectOf(path string) dialect.Dialect {
	for _, d := range dialects {
		if d.Owns(path) {
			return d
		}
	}
	return dialects[len(dialects)-1]
}

// writeError renders err (a *dialect.Refusal, or an error of the dialect owning the path) in
// the shape of the dialect the request's path belongs to.
func writeError(c *gin.Context, err error) {
	dialectOf(c.Request.URL.Path).WriteError(c, err)
}
