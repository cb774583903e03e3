package server

import (
	"context"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/quota"
	"github.com/superfluid/superfluid/server/store"
	"github.com/superfluid/superfluid/server/web"
)

// UsageQuotas are the token quotas a usage answer reports (team mode); the zero value
// reports none.
type UsageQuotas struct {
	// Caller is the asking person's quotas, Key the asking key's own; nil reports none.
	Caller, Key *quota.Status
	// People are the quotas of the persons of rows grouped by person, by person id.
	People map[string]quota.Status
}

// quotaObject is what is left of an owner's quotas on the wire: per window the quota (null:
// none), what is used (requests in flight included), what remains (null: no quota) and when it
// resets (Unix seconds). The web API shows the same object (server/web), one type for both.
type quotaObject = web.Quota

func wireQuota(st *quota.Status) *quotaObject {
	if st == nil {
		return nil
	}
	return web.QuotaOf(*st)
}

// callerQuotas are the quotas a GET /v1/usage reports: the caller's person's and key's own,
// and, grouped by person, each row's person's (rows hold only what the caller may see).
func callerQuotas(c *gin.Context, quotas *quota.Service, q core.UsageQuery, rows []core.UsageRow) (UsageQuotas, error) {
	var uq UsageQuotas
	id, ok := auth.FromContext(c.Request.Context())
	if quotas == nil || !ok {
		return uq, nil
	}
	ctx := c.Request.Context()
	if id.Person != nil {
		st, err := quotas.StatusOf(ctx, quota.Owner{Kind: store.QuotaPerson, ID: id.Person.ID})
		if err != nil {
			return uq, err
		}
		uq.Caller = &st
	}
	key := quota.Owner{Kind: store.QuotaKey, ID: id.ID}
	if l, err := quotas.LimitsOf(ctx, key); err != nil {
		return uq, err
	} else if l != (quota.Limits{}) {
		st, err := quotas.StatusOf(ctx, key)
		if err != nil {
			return uq, err
		}
		uq.Key = &st
	}
	var err error
	uq.People, err = PeopleQuotas(ctx, quotas, rows)
	return uq, err
}

// PeopleQuotas are the quotas of the persons the rows name (none when not grouped by person).
func PeopleQuotas(ctx context.Context, quotas *quota.Service, rows []core.UsageRow) (map[string]quota.Status, error) {
	out := map[string]quota.Status{}
	for _, r := range rows {
		if _, done := out[r.PersonID]; done || r.PersonID == "" {
			continue
		}
		st, err := quotas.StatusOf(ctx, quota.Owner{Kind: store.QuotaPerson, ID: r.PersonID})
		if err != nil {
			return nil, err
		}
		out[r.PersonID] = st
	}
	return out, nil
}
