package web

import (
	"net/http"
	"slices"

	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/quota"
	"github.com/superfluid/superfluid/server/store"
)

// UsageQuery is the query of GET /api/usage.
type UsageQuery struct {
	From    string `form:"from" format:"date" doc:"the first day included, YYYY-MM-DD (UTC)"`
	To      string `form:"to" format:"date" doc:"the last day included, YYYY-MM-DD (UTC)"`
	GroupBy string `form:"group_by" doc:"key, model, day and lane, comma-separated (default key,model,day); none sums everything"`
	Model   string `form:"model" doc:"one model only"`
}

// Usage is one's own usage: the request records summed as GET /v1/usage sums them, with what
// is left of one's token quotas (null without quotas).
type Usage struct {
	Object  string     `json:"object" enum:"list"`
	From    *string    `json:"from"`
	To      *string    `json:"to"`
	GroupBy []string   `json:"group_by"`
	Data    []UsageRow `json:"data"`
	Quota   *Quota     `json:"quota"`
}

// UsageRow is one group; the fields not grouped by are null.
type UsageRow struct {
	Object           string  `json:"object" enum:"usage"`
	KeyID            *string `json:"key_id"`
	KeyName          *string `json:"key_name"`
	Model            *string `json:"model"`
	Date             *string `json:"date"`
	Lane             *string `json:"lane"`
	Requests         int64   `json:"requests"`
	Errors           int64   `json:"errors"`
	PromptTokens     int64   `json:"prompt_tokens"`
	CachedTokens     int64   `json:"cached_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	TotalTokens      int64   `json:"total_tokens"`
	DurationMS       int64   `json:"duration_ms"`
}

// Quota is what is left of a person's token quotas, as /v1/usage says it (null: no quota).
type Quota struct {
	DailyTokens      *int64 `json:"daily_tokens"`
	DailyUsed        int64  `json:"daily_used"`
	DailyRemaining   *int64 `json:"daily_remaining"`
	DailyResetsAt    int64  `json:"daily_resets_at"`
	MonthlyTokens    *int64 `json:"monthly_tokens"`
	MonthlyUsed      int64  `json:"monthly_used"`
	MonthlyRemaining *int64 `json:"monthly_remaining"`
	MonthlyResetsAt  int64  `json:"monthly_resets_at"`
}

// QuotaOf is st on the wire.
func QuotaOf(st quota.Status) *Quota {
	limit := func(w quota.Window) (tokens, remaining *int64) {
		if w.Limit == 0 {
			return nil, nil
		}
		n, r := w.Limit, w.Remaining()
		return &n, &r
	}
	o := &Quota{DailyUsed: st.Daily.Used, DailyResetsAt: st.Daily.ResetsAt.Unix(), MonthlyUsed: st.Monthly.Used, MonthlyResetsAt: st.Monthly.ResetsAt.Unix()}
	o.DailyTokens, o.DailyRemaining = limit(st.Daily)
	o.MonthlyTokens, o.MonthlyRemaining = limit(st.Monthly)
	return o
}

func (a *API) usageRoutes() {
	if a.cfg.Core == nil {
		return
	}
	Handle(a, http.MethodGet, "/api/usage", Meta{Summary: "Your usage", Tag: "usage", Access: SignedIn, Query: UsageQuery{}}, a.usage)
}

// usage asks the core for the caller's own usage (ownOnly: an admin's own too, not everyone's).
func (a *API) usage(r *Request[NoBody]) (Usage, error) {
	c := r.Gin
	var q core.UsageQuery
	var err error
	from, to := c.Query("from"), c.Query("to")
	if q.From, err = core.ParseUsageDate(from); err != nil {
		return Usage{}, queryError("from", err)
	}
	if q.To, err = core.ParseUsageDate(to); err != nil {
		return Usage{}, queryError("to", err)
	}
	if group := c.DefaultQuery("group_by", "key,model,day"); group != "none" {
		if q.GroupBy, err = core.ParseGroupBy(group); err != nil {
			return Usage{}, queryError("group_by", err)
		}
	}
	q.Model = c.Query("model")
	rows, err := a.cfg.Core.Usage(ownOnly(r.Ctx), q)
	if err != nil {
		return Usage{}, err
	}
	out := Usage{Object: "list", From: orNull(from), To: orNull(to), GroupBy: nonNil(q.GroupBy), Data: make([]UsageRow, len(rows))}
	grouped := func(g string) bool { return slices.Contains(q.GroupBy, g) }
	for i, row := range rows {
		w := UsageRow{Object: "usage", Requests: row.Requests, Errors: row.Errors, PromptTokens: row.PromptTokens, CachedTokens: row.CachedTokens,
			CompletionTokens: row.CompletionTokens, TotalTokens: row.Total, DurationMS: row.Duration.Milliseconds()}
		if grouped(core.GroupKey) {
			w.KeyID, w.KeyName = &row.KeyID, &row.KeyName
		}
		if grouped(core.GroupModel) {
			w.Model = &row.Model
		}
		if grouped(core.GroupDay) {
			w.Date = &row.Day
		}
		if grouped(core.GroupLane) {
			w.Lane = &row.LaneName
		}
		out.Data[i] = w
	}
	if a.cfg.Quota != nil && r.Caller.Person.ID != "" {
		st, err := a.cfg.Quota.StatusOf(r.Ctx, quota.Owner{Kind: store.QuotaPerson, ID: r.Caller.Person.ID})
		if err != nil {
			return Usage{}, err
		}
		out.Quota = QuotaOf(st)
	}
	return out, nil
}

// queryError is a bad query parameter: 400 naming it.
func queryError(param string, err error) error {
	return &Error{Status: http.StatusBadRequest, Code: "invalid_query", Param: param, Message: param + ": " + err.Error()}
}
