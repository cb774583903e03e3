package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/forward"
)

// forwardOther, in team mode, serves a POST to a /v1 route no handler serves (the spec's
// "POST /v1/* Any other route of the model server is forwarded under the same rules"): the
// body's model field picks the lane as chat's does (core.ModelFor, the lanes router, with its
// refusals), and a lane forwarding to an OpenAI-compatible server relays the request there
// as is (forward.Proxy: the served model's name put in, the reply streamed back). The request
// counts as running on the lane, so a switch drains it, and is recorded like any routed one.
// Any other request, or a lane of the built-in worker (which has no such route), gets
// notFound.
func forwardOther(svc *core.Service, notFound gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		r := c.Request
		// A path with dot or empty segments is no route (a trailing slash is kept): relayed as
		// is, it would leave the upstream's /v1 (or, cleaned by a proxy there, be a route this
		// server accounts itself).
		p := r.URL.Path
		if r.Method != http.MethodPost || !strings.HasPrefix(p, "/v1/") || path.Clean(p) != strings.TrimSuffix(p, "/") ||
			ownAPI(p) || upstreamAdminRoutes[strings.TrimSuffix(p, "/")] {
			notFound(c)
			return
		}
		start := time.Now()
		body, err := io.ReadAll(io.LimitReader(r.Body, forward.MaxProxyBody+1))
		if err != nil {
			writeError(c, fmt.Errorf("%w: reading the request body: %v", llm.ErrInvalidInput, err))
			return
		}
		if len(body) > forward.MaxProxyBody {
			writeError(c, &llm.StatusError{Status: http.StatusRequestEntityTooLarge,
				Message: fmt.Sprintf("the request body is larger than %d MiB", forward.MaxProxyBody>>20)})
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		fields := fieldsOf(r.Header.Get("Content-Type"), body)
		m, err := svc.ModelFor(r.Context(), fields.Model)
		if err != nil {
			writeError(c, err)
			recordForwarded(c, svc, fields, nil, err, nil, start)
			return
		}
		upstream, ok := m.Requests.(*forward.Engine)
		if !ok {
			notFound(c) // the built-in worker serves only the routes the dialects have
			return
		}
		relay(c, svc, fields, m, upstream, start)
	}
}

// upstreamAdminRoutes are /v1 routes of the servers lanes forward to that change the server
// itself for everyone, not one request: vLLM's runtime LoRA loading (a path on its machine
// loaded, or an adapter others use removed). Relayed with the lane's upstream key they would
// make any member that server's admin, so they are no route here (the admin changes the
// server on the server).
var upstreamAdminRoutes = map[string]bool{"/v1/load_lora_adapter": true, "/v1/unload_lora_adapter": true}

// forwardedRoutes are the /v1 routes a dialect serves for local models that, in team mode, a
// lane forwarding to another server serves by relaying them there (its server has them). The
// audio routes take multipart bodies: the form's model field routes them.
var forwardedRoutes = map[string]bool{"/v1/rerank": true, "/v1/tokenize": true,
	"/v1/audio/transcriptions": true, "/v1/audio/translations": true}

// forwardOwnRoutes, in team mode, sends a POST to one of forwardedRoutes whose model routes to
// a lane of another server (openai or command) there, under the same rules as forwardOther;
// for a local lane, or a refusal, the dialect's own handler serves it as without lanes.
func forwardOwnRoutes(svc *core.Service) gin.HandlerFunc {
	return func(c *gin.Context) {
		r := c.Request
		if r.Method != http.MethodPost || !forwardedRoutes[r.URL.Path] || r.Body == nil {
			c.Next()
			return
		}
		start := time.Now()
		body, err := io.ReadAll(io.LimitReader(r.Body, forward.MaxProxyBody+1))
		// The handler reads the body as if nothing had: what was read, then the rest.
		r.Body = readCloser{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
		if err != nil || len(body) > forward.MaxProxyBody {
			c.Next() // the handler meets the same fault and says so in its own words
			return
		}
		fields := fieldsOf(r.Header.Get("Content-Type"), body)
		m, err := svc.ModelFor(r.Context(), fields.Model)
		if err != nil {
			c.Next()
			return
		}
		upstream, ok := m.Requests.(*forward.Engine)
		if !ok {
			c.Next()
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		relay(c, svc, fields, m, upstream, start)
		c.Abort()
	}
}

// readCloser reads from one reader and closes another.
type readCloser struct {
	io.Reader
	io.Closer
}

// relay sends the request to upstream, counted on the lane serving m, and records it.
func relay(c *gin.Context, svc *core.Service, fields bodyFields, m *core.Model, upstream *forward.Engine, start time.Time) {
	done, err := enterLane(c, m)
	if err != nil {
		writeError(c, err)
		recordForwarded(c, svc, fields, m, err, nil, start)
		return
	}
	defer done(nil)
	tap := &usageTap{ResponseWriter: c.Writer}
	if err = forward.Proxy(tap, c.Request, upstream); err != nil {
		writeError(c, err)
	}
	recordForwarded(c, svc, fields, m, err, tap, start)
}

// recordForwarded records a forwarded request with the status sent and, from tap, the
// tokens the upstream's reply named.
func recordForwarded(c *gin.Context, svc *core.Service, fields bodyFields, m *core.Model, err error, tap *usageTap, start time.Time) {
	f := core.Forwarded{Endpoint: c.Request.URL.Path, Name: fields.Model, Model: m, Stream: fields.Stream,
		Status: c.Writer.Status(), Err: err, Start: start}
	if c.Request.Context().Err() != nil && err == nil {
		f.Err = c.Request.Context().Err() // the client hung up mid-reply
	}
	if tap != nil {
		f.Usage, _ = tap.Usage()
	}
	svc.RecordForwarded(c.Request.Context(), f)
}

// ownAPIRoots are the /v1 paths of this server's own API: a POST under one that no handler
// serves (a typo'd admin call, a sub-path that does not exist) is this server's 404, never
// relayed to an upstream with the lane's key.
var ownAPIRoots = []string{"admin", "keys", "usage", "files", "batches", "models", "responses", "metrics", "lora"}

// ownAPI reports whether the cleaned /v1 path p is under one of ownAPIRoots.
func ownAPI(p string) bool {
	first, _, _ := strings.Cut(strings.TrimPrefix(p, "/v1/"), "/")
	return slices.Contains(ownAPIRoots, first)
}

// laneAcquirer is a lane's gated engine: acquiring it counts a request on the lane.
type laneAcquirer interface {
	Acquire(ctx context.Context) (llm.Engine, func(keepAlive *time.Duration), error)
}

// enterLane counts the request on the lane serving m until done, or is the lane's refusal
// (model_switching while it drains). A model outside any lane counts nothing.
func enterLane(c *gin.Context, m *core.Model) (func(*time.Duration), error) {
	a, ok := m.Engine.(laneAcquirer)
	if !ok {
		return func(*time.Duration) {}, nil
	}
	_, done, err := a.Acquire(c.Request.Context())
	return done, err
}

// bodyFields are the fields of a JSON object body routing and records read.
type bodyFields struct {
	Model  string
	Stream bool
}

// fieldsOf is a JSON object body's model and stream fields, each read on its own (a field of
// another type is left zero, the upstream judges it), or a multipart form's; zero for any
// other body.
func fieldsOf(contentType string, body []byte) bodyFields {
	var obj map[string]json.RawMessage
	var f bodyFields
	if mt, params, err := mime.ParseMediaType(contentType); err == nil && mt == "multipart/form-data" {
		return formFields(body, params["boundary"])
	}
	if json.Unmarshal(body, &obj) != nil {
		return f
	}
	_ = json.Unmarshal(obj["model"], &f.Model)
	_ = json.Unmarshal(obj["stream"], &f.Stream)
	return f
}

// formFields are a multipart form's model and stream fields (text fields of at most 1 KiB; a
// longer one, or a body that does not parse, leaves what it would have said zero).
func formFields(body []byte, boundary string) bodyFields {
	var f bodyFields
	if boundary == "" {
		return f
	}
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	for {
		p, err := mr.NextPart()
		if err != nil {
			return f
		}
		name := p.FormName()
		if p.FileName() != "" || (name != "model" && name != "stream") {
			continue
		}
		v, err := io.ReadAll(io.LimitReader(p, 1<<10+1))
		if err != nil || len(v) > 1<<10 {
			continue
		}
		if name == "model" {
			f.Model = string(v)
		} else {
			f.Stream, _ = strconv.ParseBool(strings.TrimSpace(string(v)))
		}
	}
}
