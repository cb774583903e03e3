package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core/qos"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/quota"
	"github.com/superfluid/superfluid/server/store"
)

// The admin's people, keys and audit log, as /v1/admin/users, /v1/admin/keys and
// /v1/admin/audit serve them (server/people_routes.go, keys.go, people_quota_routes.go): the
// same services, the same audit records, the same objects.
func (a *API) adminUserRoutes() {
	Handle(a, http.MethodGet, "/api/admin/users", adminMeta("users", "List the people"), a.adminUsers)
	Handle(a, http.MethodPost, "/api/admin/users", Meta{Summary: "Add a person (no password: one is generated and shown once)",
		Tag: "admin users", Access: Admin, Status: http.StatusCreated}, a.adminCreateUser)
	Handle(a, http.MethodPatch, "/api/admin/users/:id", adminMeta("users", "Change a person's role, state, password or token quotas (disabling ends their sessions)"), a.adminUpdateUser)
	Handle(a, http.MethodGet, "/api/admin/keys", Meta{Summary: "List the API keys", Tag: "admin keys", Access: Admin, Query: adminKeysQuery{}}, a.adminKeys)
	Handle(a, http.MethodPost, "/api/admin/keys", Meta{Summary: "Create an API key (shown once, as key)", Tag: "admin keys", Access: Admin,
		Status: http.StatusCreated}, a.adminCreateKey)
	Handle(a, http.MethodPatch, "/api/admin/keys/:id", adminMeta("keys", "Change a key's token quotas"), a.adminUpdateKey)
	Handle(a, http.MethodDelete, "/api/admin/keys/:id", adminMeta("keys", "Revoke a key"), a.adminRevokeKey)
	Handle(a, http.MethodGet, "/api/admin/audit", Meta{Summary: "The audit log, newest first", Tag: "admin audit", Access: Admin,
		Query: adminAuditQuery{}}, a.adminAudit)
}

// AdminUser is a person on the wire, with the admin's extras: a generated password (in the
// answer to the creation that made it only) and the person's own token quotas (in the answer
// to a change, on a server that keeps quotas).
type AdminUser struct {
	User
	Password      string `json:"password,omitempty"`
	DailyTokens   *int64 `json:"daily_tokens,omitempty"`
	MonthlyTokens *int64 `json:"monthly_tokens,omitempty"`
}

func (a *API) adminUsers(r *Request[NoBody]) (List[User], error) {
	all, err := a.cfg.People.List(r.Ctx)
	if err != nil {
		return List[User]{}, err
	}
	out := make([]User, 0, len(all))
	for _, p := range all {
		out = append(out, UserOf(p))
	}
	return ListOf(out), nil
}

// AdminNewUser is the body of POST /api/admin/users.
type AdminNewUser struct {
	Name     string  `json:"name" required:"true" minLength:"1" maxLength:"64"`
	Password *string `json:"password" maxLength:"1024" doc:"left out: one is generated and returned once"`
	Role     string  `json:"role" enum:"admin,member,"`
}

func (a *API) adminCreateUser(r *Request[AdminNewUser]) (AdminUser, error) {
	password, generated := "", ""
	if r.Body.Password == nil {
		generated = people.GeneratePassword()
		password = generated
	} else {
		password = *r.Body.Password
	}
	p, err := a.cfg.People.Create(r.Ctx, actorOf(r), people.NewPerson{Name: r.Body.Name, Password: password, Role: people.Role(r.Body.Role)})
	if err != nil {
		return AdminUser{}, err
	}
	return AdminUser{User: UserOf(p), Password: generated}, nil
}

// AdminUserChange is the body of PATCH /api/admin/users/{id}. A quota is a whole number of
// tokens (0: unlimited) or null (not set: the server's default); left out, unchanged.
type AdminUserChange struct {
	Role          *string         `json:"role" enum:"admin,member"`
	State         *string         `json:"state" enum:"active,disabled"`
	Password      *string         `json:"password" minLength:"1" maxLength:"1024"`
	DailyTokens   json.RawMessage `json:"daily_tokens" doc:"a whole number of tokens, 0 (unlimited) or more, or null (not set)"`
	MonthlyTokens json.RawMessage `json:"monthly_tokens" doc:"a whole number of tokens, 0 (unlimited) or more, or null (not set)"`
}

func (a *API) adminUpdateUser(r *Request[AdminUserChange]) (AdminUser, error) {
	change, err := quotaChange(r.Body.DailyTokens, r.Body.MonthlyTokens)
	if err != nil {
		return AdminUser{}, err
	}
	var ch people.Change
	if r.Body.Role != nil {
		role := people.Role(*r.Body.Role)
		ch.Role = &role
	}
	if r.Body.State != nil {
		state := people.State(*r.Body.State)
		ch.State = &state
	}
	ch.Password = r.Body.Password
	p, err := a.cfg.People.Update(r.Ctx, actorOf(r), r.Param("id"), ch)
	if err != nil {
		return AdminUser{}, err
	}
	out := AdminUser{User: UserOf(p)}
	out.DailyTokens, out.MonthlyTokens, err = a.setQuota(r.Ctx, actorOf(r), quota.Owner{Kind: store.QuotaPerson, ID: p.ID}, change, "user.quota", p.Name)
	return out, err
}

// quotaChange reads the two quota fields of a PATCH body.
func quotaChange(daily, monthly json.RawMessage) (quota.Change, error) {
	var ch quota.Change
	for _, f := range []struct {
		param string
		raw   json.RawMessage
		into  *quota.Value
	}{{"daily_tokens", daily, &ch.Daily}, {"monthly_tokens", monthly, &ch.Monthly}} {
		if len(f.raw) == 0 {
			continue
		}
		f.into.Given = true
		if string(f.raw) == "null" {
			continue
		}
		var n int64
		if err := json.Unmarshal(f.raw, &n); err != nil || n < 0 {
			return ch, Errorf(http.StatusBadRequest, "invalid_body", f.param,
				"%s is a whole number of tokens, 0 (unlimited) or more, or null (not set); got %s", f.param, f.raw)
		}
		f.into.Tokens = &n
	}
	return ch, nil
}

// setQuota changes o's quotas when ch says anything, audits it as action on target (as the
// /v1 routes do), and returns the settings now (nil, nil on a server without quotas).
func (a *API) setQuota(ctx context.Context, by people.Actor, o quota.Owner, ch quota.Change, action, target string) (daily, monthly *int64, err error) {
	given := ch.Daily.Given || ch.Monthly.Given
	if a.cfg.Quota == nil {
		if given {
			return nil, nil, Errorf(http.StatusBadRequest, "invalid_value", "", "this server keeps no token quotas")
		}
		return nil, nil, nil
	}
	var now store.TokenQuota
	if given {
		var before store.TokenQuota
		if before, now, err = a.cfg.Quota.Set(ctx, o, ch); err != nil {
			return nil, nil, quotaError(err)
		}
		if detail := quota.Detail(before, now); len(detail) > 0 {
			detail["id"] = o.ID
			if err := a.cfg.People.Record(ctx, by, action, target, detail); err != nil {
				return nil, nil, err
			}
		}
	} else if now, err = a.cfg.Quota.Settings(ctx, o); err != nil {
		return nil, nil, err
	}
	return now.Daily, now.Monthly, nil
}

func quotaError(err error) error {
	if errors.Is(err, quota.ErrInvalid) {
		return Errorf(http.StatusBadRequest, "invalid_value", "", "%s", err.Error())
	}
	return err
}

// AdminKey is an API key on the wire as /v1/admin/keys shows one: a Key, with its own token
// quotas in the answer to a change of them.
type AdminKey struct {
	Key
	DailyTokens   *int64 `json:"daily_tokens,omitempty"`
	MonthlyTokens *int64 `json:"monthly_tokens,omitempty"`
}

func adminKeyOf(k auth.Info) AdminKey { return AdminKey{Key: KeyOf(k)} }

// adminKeysQuery documents GET /api/admin/keys's query.
type adminKeysQuery struct {
	Revoked bool `form:"revoked" doc:"true lists revoked keys too"`
}

func (a *API) adminKeys(r *Request[NoBody]) (List[AdminKey], error) {
	infos, err := a.cfg.Keys.List(r.Ctx, r.Gin.Query("revoked") == "true")
	if err != nil {
		return List[AdminKey]{}, err
	}
	out := make([]AdminKey, 0, len(infos))
	for _, k := range infos {
		out = append(out, adminKeyOf(k))
	}
	return ListOf(out), nil
}

// AdminNewKey is the body of POST /api/admin/keys (as POST /v1/admin/keys).
type AdminNewKey struct {
	Name        string   `json:"name" required:"true" minLength:"1" maxLength:"128"`
	Admin       bool     `json:"admin"`
	Models      []string `json:"models" doc:"the models the key may use; empty: all"`
	QoS         string   `json:"qos" enum:"interactive,completion,agent,background," doc:"the highest scheduling class the key may ask for"`
	RPM         int      `json:"rpm" minimum:"0"`
	TPM         int      `json:"tpm" minimum:"0"`
	Concurrency int      `json:"concurrency" minimum:"0"`
	Origins     []string `json:"origins"`
	User        string   `json:"user" doc:"the name or id of the person the key is for"`
}

func (a *API) adminCreateKey(r *Request[AdminNewKey]) (AdminKey, error) {
	b := r.Body
	class, err := qos.Parse(b.QoS)
	if err != nil {
		return AdminKey{}, Errorf(http.StatusBadRequest, "invalid_body", "qos", "%s", err.Error())
	}
	key, info, err := a.cfg.Keys.Create(r.Ctx, auth.NewKey{Name: b.Name, Admin: b.Admin, Models: b.Models, QoS: class, Origins: b.Origins,
		Person: b.User, Limits: auth.Limits{RPM: b.RPM, TPM: b.TPM, Concurrency: b.Concurrency}})
	if err != nil {
		return AdminKey{}, err
	}
	detail := map[string]any{"id": info.ID, "admin": info.Admin}
	if info.Person != nil {
		detail["user"] = info.Person.Name
	}
	if err := a.cfg.People.Record(r.Ctx, actorOf(r), "key.create", info.Name, detail); err != nil {
		return AdminKey{}, err
	}
	o := adminKeyOf(info)
	o.Key.Key = key
	return o, nil
}

// AdminKeyChange is the body of PATCH /api/admin/keys/{id}: the key's own token quotas.
type AdminKeyChange struct {
	DailyTokens   json.RawMessage `json:"daily_tokens" doc:"a whole number of tokens, 0 (unlimited) or more, or null (not set)"`
	MonthlyTokens json.RawMessage `json:"monthly_tokens" doc:"a whole number of tokens, 0 (unlimited) or more, or null (not set)"`
}

func (a *API) adminUpdateKey(r *Request[AdminKeyChange]) (AdminKey, error) {
	change, err := quotaChange(r.Body.DailyTokens, r.Body.MonthlyTokens)
	if err != nil {
		return AdminKey{}, err
	}
	info, err := a.activeKey(r.Ctx, r.Param("id"))
	if err != nil {
		return AdminKey{}, err
	}
	o := adminKeyOf(info)
	o.DailyTokens, o.MonthlyTokens, err = a.setQuota(r.Ctx, actorOf(r), quota.Owner{Kind: store.QuotaKey, ID: info.ID}, change, "key.quota", info.Name)
	return o, err
}

// activeKey is the active key with this id or name.
func (a *API) activeKey(ctx context.Context, nameOrID string) (auth.Info, error) {
	all, err := a.cfg.Keys.List(ctx, false)
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

func (a *API) adminRevokeKey(r *Request[NoBody]) (Deleted, error) {
	info, err := a.cfg.Keys.Revoke(r.Ctx, r.Param("id"))
	if err != nil {
		return Deleted{}, err
	}
	if err := a.cfg.People.Record(r.Ctx, actorOf(r), "key.revoke", info.Name, map[string]any{"id": info.ID}); err != nil {
		return Deleted{}, err
	}
	return Deleted{ID: info.ID, Object: "api_key.deleted", Deleted: true}, nil
}

// AdminAuditEntry is an audit entry on the wire (as /v1/admin/audit; at in Unix seconds).
type AdminAuditEntry struct {
	Object string          `json:"object" enum:"audit_entry"`
	ID     int64           `json:"id"`
	At     int64           `json:"at"`
	Actor  AdminAuditActor `json:"actor"`
	Action string          `json:"action"`
	Target string          `json:"target"`
	Detail json.RawMessage `json:"detail"`
}

// AdminAuditActor is who did it: the person and the key ("" for none).
type AdminAuditActor struct {
	UserID string `json:"user_id"`
	User   string `json:"user"`
	Key    string `json:"key"`
}

// adminAuditQuery documents GET /api/admin/audit's query.
type adminAuditQuery struct {
	Limit  int    `form:"limit" minimum:"1" maximum:"1000" doc:"at most this many (default 100)"`
	Before int64  `form:"before" minimum:"1" doc:"the entries with an id below this one (the next page)"`
	Action string `form:"action" doc:"only this action (user.create, key.revoke, lane.switch, booking.approve, ...)"`
}

func (a *API) adminAudit(r *Request[NoBody]) (List[AdminAuditEntry], error) {
	limit, err := queryInt(r.Gin, "limit", 1, 1000, 100)
	if err != nil {
		return List[AdminAuditEntry]{}, err
	}
	before, err := queryInt(r.Gin, "before", 1, int(^uint(0)>>1), 0)
	if err != nil {
		return List[AdminAuditEntry]{}, err
	}
	entries, err := a.cfg.People.Audit(r.Ctx, store.AuditQuery{Limit: limit, Before: int64(before), Action: r.Gin.Query("action")})
	if err != nil {
		return List[AdminAuditEntry]{}, err
	}
	out := make([]AdminAuditEntry, 0, len(entries))
	for _, e := range entries {
		out = append(out, AdminAuditEntry{Object: "audit_entry", ID: e.ID, At: e.At.Unix(), Action: e.Action, Target: e.Target, Detail: e.Detail,
			Actor: AdminAuditActor{UserID: e.ActorPerson, User: e.ActorName, Key: e.ActorKey}})
	}
	return ListOf(out), nil
}
