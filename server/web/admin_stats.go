package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/store"
)

// The admin's numbers: stats over a window (from the request records, the usage queries
// /v1/usage sums with) and the request log.
func (a *API) adminStatsRoutes() {
	Handle(a, http.MethodGet, "/api/admin/stats", Meta{Summary: "Requests and tokens over a window, per person and model, with a series for charts",
		Tag: "admin stats", Access: Admin, Query: adminStatsQuery{}}, a.adminStats)
	Handle(a, http.MethodGet, "/api/admin/requests", Meta{Summary: "The request log, newest first, filtered",
		Tag: "admin stats", Access: Admin, Query: adminRequestsQuery{}}, a.adminRequests)
}

// adminStatsQuery documents GET /api/admin/stats's query.
type adminStatsQuery struct {
	Window string `form:"window" doc:"how far back: a duration such as 1h, 24h, 90m or 7d (default 24h; 1m to 400d)"`
}

// AdminStats is GET /api/admin/stats. Tokens are prompt plus completion tokens.
type AdminStats struct {
	Window           string `json:"window"`
	From             int64  `json:"from" doc:"the window's start, Unix seconds"`
	To               int64  `json:"to" doc:"the window's end (now), Unix seconds"`
	Requests         int64  `json:"requests"`
	Errors           int64  `json:"errors" doc:"requests answered with a status of 400 or more"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	CachedTokens     int64  `json:"cached_tokens"`
	ActiveLanes      int    `json:"active_lanes" doc:"lanes serving now"`
	QueueDepth       int    `json:"queue_depth" doc:"generations waiting for a lane now"`
	// BucketSeconds is the width of each point of Series.
	BucketSeconds int64              `json:"bucket_seconds"`
	ByPerson      []AdminStatsPerson `json:"by_person"`
	ByModel       []AdminStatsModel  `json:"by_model"`
	Series        []AdminStatsPoint  `json:"series"`
}

// AdminStatsPerson is one person's share ("" person: requests made without a person's key).
type AdminStatsPerson struct {
	Person   string `json:"person"`
	PersonID string `json:"person_id"`
	Requests int64  `json:"requests"`
	Tokens   int64  `json:"tokens"`
}

// AdminStatsModel is one model's share.
type AdminStatsModel struct {
	Model    string `json:"model"`
	Requests int64  `json:"requests"`
	Tokens   int64  `json:"tokens"`
}

// AdminStatsPoint is one bucket of the series: the requests that began in [at, at+bucket).
type AdminStatsPoint struct {
	At       int64 `json:"at"`
	Requests int64 `json:"requests"`
	Tokens   int64 `json:"tokens"`
}

// seriesPoints is how many buckets a window is cut into (at least a minute each).
const seriesPoints = 48

// parseWindow reads a window: a Go duration, or whole days as "7d".
func parseWindow(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 24 * time.Hour, nil
	}
	var d time.Duration
	var err error
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		if n, err = strconv.Atoi(days); err == nil {
			d = time.Duration(n) * 24 * time.Hour
		}
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil || d < time.Minute || d > 400*24*time.Hour {
		return 0, Errorf(http.StatusBadRequest, "invalid_value", "window", "window is a duration from 1m to 400d (such as 1h, 24h or 7d), got %q", s)
	}
	return d, nil
}

func (a *API) adminStats(r *Request[NoBody]) (AdminStats, error) {
	if a.cfg.Store == nil {
		return AdminStats{}, unavailable("store")
	}
	window, err := parseWindow(r.Gin.Query("window"))
	if err != nil {
		return AdminStats{}, err
	}
	to := a.cfg.Now().UTC()
	from := to.Add(-window)
	name := strings.TrimSpace(r.Gin.Query("window"))
	if name == "" {
		name = "24h"
	}
	out := AdminStats{Window: name, From: from.Unix(), To: to.Unix(),
		ByPerson: []AdminStatsPerson{}, ByModel: []AdminStatsModel{}}
	ctx := r.Ctx
	totals, err := a.cfg.Store.Usage(ctx, store.UsageQuery{From: from, To: to})
	if err != nil {
		return AdminStats{}, err
	}
	for _, t := range totals {
		out.Requests, out.Errors = t.Requests, t.Errors
		out.PromptTokens, out.CompletionTokens, out.CachedTokens = t.PromptTokens, t.CompletionTokens, t.CachedTokens
	}
	people, err := a.cfg.Store.Usage(ctx, store.UsageQuery{From: from, To: to, ByPerson: true})
	if err != nil {
		return AdminStats{}, err
	}
	for _, p := range people {
		out.ByPerson = append(out.ByPerson, AdminStatsPerson{Person: p.PersonName, PersonID: p.PersonID, Requests: p.Requests, Tokens: p.PromptTokens + p.CompletionTokens})
	}
	models, err := a.cfg.Store.Usage(ctx, store.UsageQuery{From: from, To: to, ByModel: true})
	if err != nil {
		return AdminStats{}, err
	}
	for _, m := range models {
		out.ByModel = append(out.ByModel, AdminStatsModel{Model: m.Model, Requests: m.Requests, Tokens: m.PromptTokens + m.CompletionTokens})
	}
	bucket := max(window/seriesPoints, time.Minute).Truncate(time.Second)
	out.BucketSeconds = int64(bucket / time.Second)
	points, err := a.cfg.Store.RequestSeries(ctx, from, to, bucket)
	if err != nil {
		return AdminStats{}, err
	}
	out.Series = make([]AdminStatsPoint, 0, len(points))
	for _, p := range points {
		out.Series = append(out.Series, AdminStatsPoint{At: p.At.Unix(), Requests: p.Requests, Tokens: p.PromptTokens + p.CompletionTokens})
	}
	if a.cfg.Lanes != nil {
		all, err := a.cfg.Lanes.List(ctx)
		if err != nil {
			return AdminStats{}, err
		}
		for _, l := range all {
			if l.State == lanes.Serving {
				out.ActiveLanes++
			}
		}
	}
	if a.cfg.Core != nil {
		for _, m := range a.cfg.Core.Models() {
			out.QueueDepth += m.Waiting()
		}
	}
	return out, nil
}

// adminRequestsQuery documents GET /api/admin/requests's query.
type adminRequestsQuery struct {
	Person string `form:"person" doc:"a person's name or id"`
	Model  string `form:"model"`
	Lane   string `form:"lane" doc:"a lane's name"`
	Status string `form:"status" doc:"a status (429), a class (4xx), error (400 and above) or ok"`
	Since  string `form:"since" doc:"RFC 3339 or Unix seconds"`
	Until  string `form:"until" doc:"RFC 3339 or Unix seconds (exclusive)"`
	Limit  int    `form:"limit" minimum:"1" maximum:"1000" doc:"at most this many (default 100)"`
	Before string `form:"before" doc:"the id of the last record of the previous page"`
}

// AdminRequest is one record of the request log (at in Unix seconds).
type AdminRequest struct {
	ID               string `json:"id"`
	At               int64  `json:"at"`
	Person           string `json:"person"`
	Key              string `json:"key"`
	Model            string `json:"model"`
	Lane             string `json:"lane"`
	Engine           string `json:"engine"`
	Route            string `json:"route"`
	Status           int    `json:"status"`
	Error            string `json:"error,omitempty"`
	Stream           bool   `json:"stream"`
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
	CachedTokens     int    `json:"cached_tokens"`
	DurationMs       int64  `json:"duration_ms"`
	// SpecProposed and SpecAccepted are speculative decoding's drafted and kept tokens;
	// RestoredTokens the cached tokens read from the prefix cache on disk; CacheMiss why the
	// prompt missed the cache ("" for a hit).
	SpecProposed   int    `json:"spec_proposed"`
	SpecAccepted   int    `json:"spec_accepted"`
	RestoredTokens int    `json:"restored_tokens"`
	CacheMiss      string `json:"cache_miss,omitempty"`
}

func (a *API) adminRequests(r *Request[NoBody]) (List[AdminRequest], error) {
	fail := func(err error) (List[AdminRequest], error) { return List[AdminRequest]{}, err }
	if a.cfg.Store == nil {
		return fail(unavailable("store"))
	}
	c := r.Gin
	q := store.RequestLogQuery{Person: c.Query("person"), Model: c.Query("model"), Lane: c.Query("lane"), Status: c.Query("status"), Before: c.Query("before")}
	var err error
	if q.Limit, err = queryInt(c, "limit", 1, 1000, 100); err != nil {
		return fail(err)
	}
	if q.Since, err = queryTime(c, "since"); err != nil {
		return fail(err)
	}
	if q.Until, err = queryTime(c, "until"); err != nil {
		return fail(err)
	}
	if err := store.ParseStatusFilter(q.Status); err != nil {
		return fail(Errorf(http.StatusBadRequest, "invalid_value", "status", "%s", err.Error()))
	}
	recs, err := a.cfg.Store.RequestLog(r.Ctx, q)
	if errors.Is(err, store.ErrNotFound) {
		return fail(Errorf(http.StatusBadRequest, "invalid_value", "before", "before names no request record: pass the id of the last record of the previous page"))
	}
	if err != nil {
		return fail(err)
	}
	out := make([]AdminRequest, 0, len(recs))
	for _, rec := range recs {
		out = append(out, AdminRequest{ID: rec.ID, At: rec.CreatedAt.Unix(), Person: rec.PersonName, Key: rec.KeyName, Model: rec.Model,
			Lane: rec.LaneName, Engine: rec.Engine, Route: rec.Endpoint, Status: rec.Status, Error: rec.Error, Stream: rec.Stream,
			PromptTokens: rec.PromptTokens, CompletionTokens: rec.CompletionTokens, CachedTokens: rec.CachedTokens, DurationMs: rec.Total.Milliseconds(),
			SpecProposed: rec.SpecProposed, SpecAccepted: rec.SpecAccepted, RestoredTokens: rec.RestoredTokens, CacheMiss: rec.CacheMiss})
	}
	return ListOf(out), nil
}
