package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// RequestLogQuery selects request records for the admin's request log, newest first.
type RequestLogQuery struct {
	// Person keeps one person's records: their id or name ("" keeps all).
	Person string
	// Model and Lane keep one model's or one lane's records (by lane name).
	Model, Lane string
	// Status keeps records by HTTP status: a status ("429"), a class ("2xx", "4xx", "5xx"),
	// "error" (400 and above) or "ok" (below 400); "" keeps all. ParseStatusFilter checks it.
	Status string
	// Since and Until bound CreatedAt: Since <= t < Until; a zero bound is open.
	Since, Until time.Time
	// Limit bounds the page (1..1000; 0 is 100).
	Limit int
	// Before is the id of the last record of the previous page: this page starts after it.
	Before string
}

// ErrBadStatusFilter is returned for a RequestLogQuery.Status that is none of its forms.
var ErrBadStatusFilter = errors.New("status is a status code (429), a class (4xx), error or ok")

// statusCondition turns a status filter into an SQL condition and its arguments.
func statusCondition(f string) (string, []any, error) {
	f = strings.ToLower(strings.TrimSpace(f))
	switch {
	case f == "":
		return "", nil, nil
	case f == "error":
		return "status >= 400", nil, nil
	case f == "ok":
		return "status < 400", nil, nil
	case len(f) == 3 && f[1:] == "xx" && f[0] >= '1' && f[0] <= '5':
		lo := int(f[0]-'0') * 100
		return "status >= ? AND status < ?", []any{lo, lo + 100}, nil
	}
	n, err := strconv.Atoi(f)
	if err != nil || n < 100 || n > 599 {
		return "", nil, fmt.Errorf("%w, not %q", ErrBadStatusFilter, f)
	}
	return "status = ?", []any{n}, nil
}

// ParseStatusFilter reports whether f is a valid RequestLogQuery.Status (nil) or why not.
func ParseStatusFilter(f string) error {
	_, _, err := statusCondition(f)
	return err
}

// RequestLog lists the records q selects, newest first (records made at the same instant in
// reverse order of recording). A Before that names no record is ErrNotFound.
func (s *Store) RequestLog(ctx context.Context, q RequestLogQuery) ([]RequestRecord, error) {
	if q.Limit <= 0 {
		q.Limit = 100
	}
	q.Limit = min(q.Limit, 1000)
	var where []string
	var args []any
	add := func(cond string, a ...any) { where, args = append(where, cond), append(args, a...) }
	if q.Person != "" {
		add("(person_id = ? OR person_name = ?)", q.Person, q.Person)
	}
	if q.Model != "" {
		add("model = ?", q.Model)
	}
	if q.Lane != "" {
		add("lane_name = ?", q.Lane)
	}
	cond, condArgs, err := statusCondition(q.Status)
	if err != nil {
		return nil, err
	}
	if cond != "" {
		add(cond, condArgs...)
	}
	if !q.Since.IsZero() {
		add("created_at >= ?", formatTime(q.Since))
	}
	if !q.Until.IsZero() {
		add("created_at < ?", formatTime(q.Until))
	}
	if q.Before != "" {
		var n int
		if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM requests WHERE id = ?`, q.Before).Scan(&n); err != nil {
			return nil, fmt.Errorf("request log: %w", err)
		}
		if n == 0 {
			return nil, fmt.Errorf("request log: the page's start %s: %w", q.Before, ErrNotFound)
		}
		add("(created_at, rowid) < (SELECT created_at, rowid FROM requests WHERE id = ?)", q.Before)
	}
	query := `SELECT ` + requestColumns + ` FROM requests`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	out, err := queryRows(ctx, s, "request log", scanRequest, query+` ORDER BY created_at DESC, rowid DESC LIMIT ?`, append(args, q.Limit)...)
	if out == nil && err == nil {
		out = []RequestRecord{}
	}
	return out, err
}

// SeriesPoint is one bucket of a request series: the requests that began in [At, At+bucket).
type SeriesPoint struct {
	At                                           time.Time
	Requests                                     int64
	PromptTokens, CompletionTokens, CachedTokens int64
}

// RequestSeries sums the records made in [from, to) into buckets of the given width (at
// least a second) starting at from; every bucket is listed, empty ones with zeros.
func (s *Store) RequestSeries(ctx context.Context, from, to time.Time, bucket time.Duration) ([]SeriesPoint, error) {
	if bucket < time.Second || !to.After(from) {
		return nil, fmt.Errorf("request series: want a bucket of a second or more and from before to")
	}
	width := int64(bucket / time.Second)
	start := from.UTC().Truncate(time.Second)
	n := int((to.Sub(start) + bucket - 1) / bucket)
	out := make([]SeriesPoint, n)
	for i := range out {
		out[i].At = start.Add(time.Duration(i) * bucket)
	}
	// created_at is RFC 3339 UTC text; its first 19 characters are what strftime reads.
	rows, err := queryRows(ctx, s, "request series", func(row interface{ Scan(...any) error }) (struct {
		i int
		p SeriesPoint
	}, error) {
		var r struct {
			i int
			p SeriesPoint
		}
		err := row.Scan(&r.i, &r.p.Requests, &r.p.PromptTokens, &r.p.CompletionTokens, &r.p.CachedTokens)
		return r, err
	}, `SELECT (CAST(strftime('%s', substr(created_at, 1, 19)) AS INTEGER) - ?) / ? AS bucket,
		count(*), coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0), coalesce(sum(cached_tokens), 0)
		FROM requests WHERE created_at >= ? AND created_at < ? GROUP BY bucket`,
		start.Unix(), width, formatTime(from), formatTime(to))
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if r.i >= 0 && r.i < n {
			at := out[r.i].At
			out[r.i] = r.p
			out[r.i].At = at
		}
	}
	return out, nil
}
