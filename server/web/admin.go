package web

// The admin routes (/api/admin/*, part B): every one is Access Admin, over the services the
// /v1/admin API uses, with the same audit records. The files:
//
//	admin_users.go     users, keys, audit
//	admin_bookings.go  reservations (approve, reject)
//	admin_lanes.go     lanes
//	admin_runtime.go   runtime details, load history, manual start/stop
//	admin_log.go       the runtime log: download and live stream (SSE)
//	admin_stats.go     stats over a window, the request log
//	admin_settings.go  the bookings policy and the default QoS
//	admin_backups.go   online backup download, checked restore

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/people"
)

// registerAdmin registers every /api/admin route except storage (storage_*.go).
func registerAdmin(a *API) {
	a.loadDefaultQoS()
	a.adminUserRoutes()
	a.adminBookingRoutes()
	a.adminLaneRoutes()
	a.adminRuntimeRoutes()
	a.adminLogRoutes()
	a.adminStatsRoutes()
	a.adminSettingsRoutes()
	a.adminBackupRoutes()
}

// adminMeta is the Meta of an admin route.
func adminMeta(tag, summary string) Meta {
	return Meta{Summary: summary, Tag: "admin " + tag, Access: Admin}
}

// actorOf is who sent the request, for the audit log (the session's person or the key).
func actorOf[In any](r *Request[In]) people.Actor {
	id, _ := auth.FromContext(r.Ctx)
	return people.ActorOf(id)
}

// unavailable is the refusal of a route whose service this server lacks.
func unavailable(what string) *Error {
	return Errorf(http.StatusNotFound, "not_found", "", "this server has no %s", what)
}

// queryInt reads a whole-number query parameter in [lo, hi]; def when absent.
func queryInt(c *gin.Context, name string, lo, hi, def int) (int, error) {
	v := c.Query(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, Errorf(http.StatusBadRequest, "invalid_value", name, "%s is a whole number from %d to %d, got %q", name, lo, hi, v)
	}
	return n, nil
}

// queryTime reads a time query parameter: RFC 3339 or Unix seconds; zero when absent.
func queryTime(c *gin.Context, name string) (time.Time, error) {
	v := strings.TrimSpace(c.Query(name))
	if v == "" {
		return time.Time{}, nil
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Unix(secs, 0).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, Errorf(http.StatusBadRequest, "invalid_value", name, "%s is an RFC 3339 time or Unix seconds, got %q", name, v)
	}
	return t.UTC(), nil
}

// unixOrNil is t in Unix seconds, nil when zero.
func unixOrNil(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	u := t.Unix()
	return &u
}
