package server

import (
	"errors"
	"net/http"
	"slices"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/dialect"
	"github.com/superfluid/superfluid/server/quota"
)

// usageRoutes serves GET /v1/usage: the request records summed by key, model and day, in the
// error shape the router's table gives its path (OpenAI's). An admin key (or anyone, without keys) sees every key; another key
// sees its own only (403 admin_required when it names another).
//
// Query parameters, all optional:
//
//	start_date, end_date  first and last day included, YYYY-MM-DD in UTC (open when absent)
//	group_by              key, model, day, person and lane (team mode), comma-separated (default
//	                      "key,model,day"; "none" sums everything in one row)
//	key                   one key, by name or id (an admin's filter)
//	model                 one model
//
// The answer:
//
//	{"object": "list", "start_date": "2026-05-01" | null, "end_date": ... | null,
//	 "group_by": ["key", "model", "day"],
//	 "data": [{"object": "usage", "key_id": "policy:alice", "key_name": "alice",
//	           "model": "qwen3-4b", "date": "2026-05-01",
//	           "requests": 12, "errors": 1, "prompt_tokens": 3400, "cached_tokens": 1200,
//	           "completion_tokens": 800, "total_tokens": 4200, "duration_ms": 5400}]}
//
// key_id, key_name, model and date are null when not grouped by; person_id and person_name
// are there only when grouped by person ("" for requests made without a person's key), lane and
// engine (the lane's engine kind) only when grouped by lane ("" for requests no lane served); key_id and key_name are ""
// for requests made while no key was configured. Rows come by date, key name and model.
// errors counts requests answered with a status of 400 or more (499: the client hung up).
//
// In team mode (quotas set) the answer also says what is left of the token quotas (see
// quotaObject): "quota" the asking person's, "key_quota" the asking key's own (when it has
// one), and each row grouped by person its person's "quota".
func usageRoutes(r gin.IRouter, svc *core.Service, quotas *quota.Service) {
	r.GET("/v1/usage", func(c *gin.Context) {
		if err := usage(c, svc, quotas); err != nil {
			writeError(c, usageError(err))
		}
	})
}

type usageList struct {
	Object    string     `json:"object"`
	StartDate *string    `json:"start_date"`
	EndDate   *string    `json:"end_date"`
	GroupBy   []string   `json:"group_by"`
	Data      []usageRow `json:"data"`
	// Quota and KeyQuota, in team mode: the asking person's and key's (usage_quota.go).
	Quota    *quotaObject `json:"quota,omitempty"`
	KeyQuota *quotaObject `json:"key_quota,omitempty"`
}

type usageRow struct {
	Object           string  `json:"object"`
	KeyID            *string `json:"key_id"`
	KeyName          *string `json:"key_name"`
	Model            *string `json:"model"`
	Date             *string `json:"date"`
	PersonID         *string `json:"person_id,omitempty"` // only when grouped by person
	PersonName       *string `json:"person_name,omitempty"`
	Lane             *string `json:"lane,omitempty"` // only when grouped by lane ("" for requests outside lanes)
	Engine           *string `json:"engine,omitempty"`
	Requests         int64   `json:"requests"`
	Errors           int64   `json:"errors"`
	PromptTokens     int64   `json:"prompt_tokens"`
	CachedTokens     int64   `json:"cached_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	TotalTokens      int64   `json:"total_tokens"`
	DurationMS       int64   `json:"duration_ms"`
	// Quota is the row's person's, in team mode when grouped by person.
	Quota *quotaObject `json:"quota,omitempty"`
}

func usage(c *gin.Context, svc *core.Service, quotas *quota.Service) error {
	var q core.UsageQuery
	var err error
	start, end := c.Query("start_date"), c.Query("end_date")
	if q.From, err = core.ParseUsageDate(start); err != nil {
		return err
	}
	if q.To, err = core.ParseUsageDate(end); err != nil {
		return err
	}
	group := c.DefaultQuery("group_by", "key,model,day")
	if group != "none" {
		if q.GroupBy, err = core.ParseGroupBy(group); err != nil {
			return err
		}
	}
	q.Key, q.Model = c.Query("key"), c.Query("model")
	rows, err := svc.Usage(c.Request.Context(), q)
	if err != nil {
		return err
	}
	uq, err := callerQuotas(c, quotas, q, rows)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, TeamUsageList(q, start, end, rows, uq))
	return nil
}

// UsageList is the JSON of GET /v1/usage (see usageRoutes) for the query q, whose dates were
// given as start and end ("" for none), and its rows; superfluid usage --json prints it too.
func UsageList(q core.UsageQuery, start, end string, rows []core.UsageRow) any {
	return TeamUsageList(q, start, end, rows, UsageQuotas{})
}

// TeamUsageList is UsageList with what is left of the token quotas in uq (team mode).
func TeamUsageList(q core.UsageQuery, start, end string, rows []core.UsageRow, uq UsageQuotas) any {
	out := usageList{Quota: wireQuota(uq.Caller), KeyQuota: wireQuota(uq.Key), Object: "list", GroupBy: q.GroupBy, Data: make([]usageRow, len(rows))}
	if out.GroupBy == nil {
		out.GroupBy = []string{}
	}
	if start != "" {
		out.StartDate = &start
	}
	if end != "" {
		out.EndDate = &end
	}
	grouped := func(g string) bool { return slices.Contains(q.GroupBy, g) }
	for i, r := range rows {
		w := usageRow{Object: "usage", Requests: r.Requests, Errors: r.Errors, PromptTokens: r.PromptTokens,
			CachedTokens: r.CachedTokens, CompletionTokens: r.CompletionTokens, TotalTokens: r.Total, DurationMS: r.Duration.Milliseconds()}
		if grouped(core.GroupKey) {
			w.KeyID, w.KeyName = &r.KeyID, &r.KeyName
		}
		if grouped(core.GroupModel) {
			w.Model = &r.Model
		}
		if grouped(core.GroupDay) {
			w.Date = &r.Day
		}
		if grouped(core.GroupLane) {
			w.Lane, w.Engine = &r.LaneName, &r.Engine
		}
		if grouped(core.GroupPerson) {
			w.PersonID, w.PersonName = &r.PersonID, &r.PersonName
			if st, ok := uq.People[r.PersonID]; ok {
				w.Quota = wireQuota(&st)
			}
		}
		out.Data[i] = w
	}
	return out
}

func usageError(err error) error {
	if errors.Is(err, core.ErrOtherKeysUsage) {
		return &dialect.Refusal{Status: http.StatusForbidden, Code: "admin_required", Param: "key", Message: err.Error()}
	}
	return err
}
