package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/dialect"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/quota"
	"github.com/superfluid/superfluid/server/store"
)

// Team mode's token quotas in the admin API (package quota), audited as user.quota and
// key.quota:
//
//	PATCH /v1/admin/users/{id}  also takes "daily_tokens" and "monthly_tokens"
//	PATCH /v1/admin/keys/{id}   {"daily_tokens"?, "monthly_tokens"?} (id or name) → the key
//
// A quota is a whole number of tokens: 0 is unlimited, null is "not set" (a person then has
// the server's --quota-daily-tokens / --quota-monthly-tokens, a key no quota of its own);
// anything else (a negative number, a fraction, a string) is 400. The answers carry the owner's
// own settings as daily_tokens and monthly_tokens (null: not set).

// tokensField is a quota in a PATCH body: absent (unchanged), null, or a whole number ≥ 0.
type tokensField struct{ quota.Value }

func (f *tokensField) UnmarshalJSON(b []byte) error {
	f.Given = true
	if string(b) == "null" {
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil || n < 0 {
		return fmt.Errorf("a quota is a whole number of tokens, 0 (unlimited) or more, or null (not set), got %s", b)
	}
	f.Tokens = &n
	return nil
}

// quotaFields are the quota fields of a PATCH body.
type quotaFields struct {
	DailyTokens   tokensField `json:"daily_tokens"`
	MonthlyTokens tokensField `json:"monthly_tokens"`
}

func (q quotaFields) given() bool { return q.DailyTokens.Given || q.MonthlyTokens.Given }

func (q quotaFields) change() quota.Change {
	return quota.Change{Daily: q.DailyTokens.Value, Monthly: q.MonthlyTokens.Value}
}

// ownQuota is an owner's own quota settings on the wire.
type ownQuota struct {
	DailyTokens   *int64 `json:"daily_tokens"`
	MonthlyTokens *int64 `json:"monthly_tokens"`
}

// setQuota changes o's quotas as fields say (when they say anything), audits the change as
// action on target, and returns the settings now.
func (h peopleHandlers) setQuota(c *gin.Context, o quota.Owner, fields quotaFields, action, target string) (ownQuota, error) {
	ctx := c.Request.Context()
	if h.quota == nil {
		if fields.given() {
			return ownQuota{}, &dialect.Refusal{Status: http.StatusBadRequest, Message: "this server keeps no token quotas"}
		}
		return ownQuota{}, nil
	}
	var now store.TokenQuota
	var err error
	if fields.given() {
		var before store.TokenQuota
		if before, now, err = h.quota.Set(ctx, o, fields.change()); err != nil {
			return ownQuota{}, err
		}
		if detail := quota.Detail(before, now); len(detail) > 0 {
			detail["id"] = o.ID
			if err := h.people.Record(ctx, actor(c), action, target, detail); err != nil {
				return ownQuota{}, err
			}
		}
	} else if now, err = h.quota.Settings(ctx, o); err != nil {
		return ownQuota{}, err
	}
	return ownQuota{now.Daily, now.Monthly}, nil
}

// updateKey is PATCH /v1/admin/keys/{id}: the key's token quotas.
func (h peopleHandlers) updateKey(c *gin.Context) error {
	var req quotaFields
	if err := decodeStrict(c, &req, `{"daily_tokens": 100000, "monthly_tokens": null}`); err != nil {
		return err
	}
	info, err := h.activeKey(c, strings.TrimSpace(c.Param("id")))
	if err != nil {
		return err
	}
	own, err := h.setQuota(c, quota.Owner{Kind: store.QuotaKey, ID: info.ID}, req, "key.quota", info.Name)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, struct {
		keyObject
		ownQuota
	}{wireKey(info), own})
	return nil
}

// activeKey is the active key with this id or name.
func (h peopleHandlers) activeKey(c *gin.Context, nameOrID string) (auth.Info, error) {
	all, err := h.keys.keys.List(c.Request.Context(), false)
	if err != nil {
		return auth.Info{}, err
	}
	for _, k := range all {
		if k.ID == nameOrID || k.Name == nameOrID {
			return k, nil
		}
	}
	return auth.Info{}, fmt.Errorf("%w: no active key is named %q or has that id", auth.ErrKeyNotFound, nameOrID)
}

// quotaError maps the quotas' errors, then the people's.
func quotaError(err error) error {
	if errors.Is(err, quota.ErrInvalid) {
		return &dialect.Refusal{Status: http.StatusBadRequest, Message: err.Error()}
	}
	return peopleError(err)
}

// personQuota is a user object with the person's own quotas (PATCH /v1/admin/users/{id}).
type personQuota struct {
	userObject
	ownQuota
}

func (h peopleHandlers) userWithQuota(c *gin.Context, p people.Person, fields quotaFields) (any, error) {
	if h.quota == nil && !fields.given() {
		return wireUser(p), nil
	}
	own, err := h.setQuota(c, quota.Owner{Kind: store.QuotaPerson, ID: p.ID}, fields, "user.quota", p.Name)
	if err != nil {
		return nil, err
	}
	return personQuota{wireUser(p), own}, nil
}
