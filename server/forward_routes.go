package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
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
// counts as running on the lane, so a switch drains it. Any other request, or a lane of the
// built-in worker (which has no such route), gets notFound.
func forwardOther(svc *core.Service, notFound gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		r := c.Request
		// A path with dot or empty segments is no route (a trailing slash is kept): relayed as
		// is, it would leave the upstream's /v1 (or, cleaned by a proxy there, be a route this
		// server accounts itself).
		p := r.URL.Path
		if r.Method != http.MethodPost || !strings.HasPrefix(p, "/v1/") || path.Clean(p) != strings.TrimSuffix(p, "/") {
			notFound(c)
			return
		}
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
		m, err := svc.ModelFor(r.Context(), modelField(body))
		if err != nil {
			writeError(c, err)
			return
		}
		upstream, ok := m.Requests.(*forward.Engine)
		if !ok {
			notFound(c) // the built-in worker serves only the routes the dialects have
			return
		}
		done, err := enterLane(c, m)
		if err != nil {
			writeError(c, err)
			return
		}
		defer done(nil)
		if err := forward.Proxy(c.Writer, r, upstream); err != nil {
			writeError(c, err)
		}
	}
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

// modelField is a JSON object body's "model" string; "" for any other body.
func modelField(body []byte) string {
	var v struct {
		Model string `json:"model"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	return v.Model
}
