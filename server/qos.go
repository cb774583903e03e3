package server

import (
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/core/qos"
	"github.com/superfluid/superfluid/server/dialect"
)

// Scheduling headers (see core's qos.go for what they do).
const (
	// QoSHeader names the request's scheduling class: interactive, completion, agent or
	// background.
	QoSHeader = "X-Superfluid-Qos"
	// BatchInvariantHeader asks for a lane that ticks alone ("1", "true", "yes" or "on";
	// "0", "false", "no" or "off" ask for none). It needs AllowBatchInvariant.
	BatchInvariantHeader = "X-Superfluid-Batch-Invariant"
)

// policies are the middleware after the guard (which put the request's key in its context):
// the scheduling headers, the rate limits and the non-streaming keep-alive, in that order, so
// a request refused for a bad header spends no rate budget.
func policies(cfg Config) []gin.HandlerFunc {
	limits := cfg.Limits
	if limits == nil {
		limits = NewLimits(LimitsConfig{})
	}
	hs := []gin.HandlerFunc{schedulingHeaders(cfg.AllowBatchInvariant, cfg.DefaultQoS), limits.handle}
	if cfg.NonstreamKeepalive > 0 {
		hs = append(hs, keepalive(cfg.NonstreamKeepalive))
	}
	return hs
}

// schedulingHeaders reads x-superfluid-qos and x-superfluid-batch-invariant into the request's
// context (core.WithScheduling). An unknown class or switch is 400; a class above the key's
// ceiling 403 admin_required; batch-invariant without --http-allow-batch-invariant 400. A
// request without a class gets defaultQoS's (nil or Unset: the endpoint's own), lowered to the
// key's ceiling by the core like any default.
func schedulingHeaders(allowInvariant bool, defaultQoS func() qos.Class) gin.HandlerFunc {
	return func(c *gin.Context) {
		qh, bh := c.GetHeader(QoSHeader), c.GetHeader(BatchInvariantHeader)
		var s core.Scheduling
		if qh == "" && defaultQoS != nil {
			s.QoS = defaultQoS()
		}
		if qh == "" && bh == "" {
			if s.QoS != qos.Unset {
				c.Request = c.Request.WithContext(core.WithScheduling(c.Request.Context(), s))
			}
			c.Next()
			return
		}
		if qh != "" {
			q, err := qos.Parse(qh)
			if err != nil {
				reject(c, http.StatusBadRequest, "", "x-superfluid-qos: "+quote(qh)+" is not a class; use interactive, completion, agent or background", 0)
				return
			}
			if id, ok := auth.FromContext(c.Request.Context()); ok && !id.AllowsQoS(q) {
				reject(c, http.StatusForbidden, "admin_required", "the API key "+quote(id.Name)+" may ask for scheduling classes up to "+
					id.QoS.String()+", not x-superfluid-qos: "+q.String()+"; send a lower class or use a key allowed this one", 0)
				return
			}
			s.QoS = q
		}
		if bh != "" {
			on, ok := parseSwitch(bh)
			switch {
			case !ok:
				reject(c, http.StatusBadRequest, "", "x-superfluid-batch-invariant: "+quote(bh)+" is neither on (1, true) nor off (0, false)", 0)
				return
			case on && !allowInvariant:
				reject(c, http.StatusBadRequest, "", "x-superfluid-batch-invariant needs the server started with --http-allow-batch-invariant "+
					"(a batch-invariant request takes every lane of its model while it runs)", 0)
				return
			}
			s.BatchInvariant = on
		}
		c.Request = c.Request.WithContext(core.WithScheduling(c.Request.Context(), s))
		c.Next()
	}
}

// parseSwitch reads an on/off header value.
func parseSwitch(v string) (on, ok bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true, true
	case "0", "false", "no", "off":
		return false, true
	}
	return false, false
}

// reject answers a request the policies stop (400, 403 or 429) in the shape of the dialect its
// path belongs to (dialects.go), with Retry-After (whole seconds, at least 1) when retryAfter
// is set, and ends its chain.
func reject(c *gin.Context, status int, code, msg string, retryAfter time.Duration) {
	secs := 0
	if retryAfter > 0 {
		secs = int(math.Ceil(retryAfter.Seconds()))
	}
	writeError(c, &dialect.Refusal{Status: status, Code: code, Message: msg, RetryAfter: secs})
	c.Abort()
}
