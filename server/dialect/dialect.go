// Package dialect is the seam between the router and the API dialects. Each dialect package
// (server/openai, server/anthropic, server/ollama) exports one Dialect: which request paths
// are its own, and its one function rendering an error in its shape. The router keeps one
// table of them and answers every request it refuses itself (a missing key, a rate limit, a
// bad scheduling header, an unknown route, a panic) in the shape of the dialect owning the
// path, so each client reads the refusal as its own API words it.
//
// A Refusal is the router's error, neutral of shape: each dialect maps its status to its own
// error type (401 is OpenAI's invalid_request_error, Anthropic's authentication_error).
package dialect

import "github.com/gin-gonic/gin"

// Dialect is one API dialect as the router sees it.
type Dialect struct {
	// Name names the dialect ("openai"), for tests and logs.
	Name string
	// Owns reports whether a request to path is answered in this dialect's shape.
	Owns func(path string) bool
	// WriteError renders err, a *Refusal or any error of the dialect's handlers, as the
	// dialect's error response.
	WriteError func(c *gin.Context, err error)
}

// Refusal is an error the router answers a request with before (or instead of) a dialect's
// handler: each dialect renders it with the error type its status goes with.
type Refusal struct {
	Status int
	// Code is a machine-readable reason ("invalid_api_key", "rate_limit_exceeded") for the
	// shapes that carry one (OpenAI's); empty sends none.
	Code string
	// Param names the parameter at fault, for the shapes that carry one; empty sends none.
	Param   string
	Message string
	// RetryAfter, when above 0, is sent as the Retry-After header (whole seconds).
	RetryAfter int
}

func (r *Refusal) Error() string { return r.Message }
