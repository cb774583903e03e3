package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/dialect"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/quota"
	"github.com/superfluid/superfluid/server/store"
)

// peopleRoutes serves team mode's admin API, in OpenAI's error shape; every route is an admin
// route and every write is audited (who: the request's key and its person):
//
//	GET    /v1/admin/users        {"object": "list", "data": [user...]}
//	POST   /v1/admin/users        {"name", "password"?, "role"?} → 201 the user; with no password
//	                              one is generated and returned once as "password"
//	PATCH  /v1/admin/users/{id}   {"role"?, "state"?, "password"?, "daily_tokens"?,
//	                              "monthly_tokens"?} (id or name) → the user (quotas:
//	                              people_quota_routes.go)
//	GET    /v1/admin/audit        {"object": "list", "data": [entry...]} newest first;
//	                              ?limit=N (≤1000), ?before=ID (the next page), ?action=A
//	GET    /v1/admin/keys         as GET /v1/keys
//	POST   /v1/admin/keys         as POST /v1/keys, plus "user": the person the key is for
//	DELETE /v1/admin/keys/{id}    as DELETE /v1/keys/{id}
//	PATCH  /v1/admin/keys/{id}    {"daily_tokens"?, "monthly_tokens"?} → the key
//
// In team mode /v1/keys is served here too, by the same audited handlers.
//
// A user object is {"object": "user", "id", "name", "role", "state", "created_at",
// "updated_at"} (Unix seconds); an entry {"object": "audit_entry", "id", "at", "actor":
// {"user_id", "user", "key"}, "action", "target", "detail"}.
func peopleRoutes(r *gin.Engine, ppl *people.Service, keys *auth.Keyring, quotas *quota.Service) {
	h := peopleHandlers{ppl, keyHandlers{keys}, quotas}
	r.GET("/v1/admin/users", h.wrap(h.list))
	r.POST("/v1/admin/users", h.wrap(h.create))
	r.PATCH("/v1/admin/users/:id", h.wrap(h.update))
	r.GET("/v1/admin/audit", h.wrap(h.audit))
	if keys != nil {
		for _, base := range []string{"/v1/admin/keys", "/v1/keys"} {
			r.GET(base, h.wrap(h.keys.list))
			r.POST(base, h.wrap(h.createKey))
			r.DELETE(base+"/:id", h.wrap(h.revokeKey))
		}
		r.PATCH("/v1/admin/keys/:id", h.wrap(h.updateKey))
	}
}

type peopleHandlers struct {
	people *people.Service
	keys   keyHandlers
	quota  *quota.Service // team mode's token quotas; nil keeps none
}

// wrap checks for an admin and renders the handler's error in OpenAI's shape.
func (h peopleHandlers) wrap(fn func(*gin.Context) error) gin.HandlerFunc {
	return adminOnly(quotaError, fn)
}

// peopleError maps the people's and the keyring's errors to refusals.
func peopleError(err error) error {
	switch {
	case errors.Is(err, people.ErrInvalid):
		return &dialect.Refusal{Status: http.StatusBadRequest, Message: err.Error()}
	case errors.Is(err, people.ErrNameTaken):
		return &dialect.Refusal{Status: http.StatusConflict, Code: "user_exists", Param: "name", Message: err.Error()}
	case errors.Is(err, people.ErrNotFound):
		return &dialect.Refusal{Status: http.StatusNotFound, Code: "user_not_found", Message: err.Error()}
	case errors.Is(err, people.ErrLastAdmin):
		return &dialect.Refusal{Status: http.StatusConflict, Code: "last_admin", Message: err.Error()}
	}
	return keyError(err)
}

// actor is who sent the request, for the audit log.
func actor(c *gin.Context) people.Actor {
	id, _ := auth.FromContext(c.Request.Context())
	return people.ActorOf(id)
}

// userObject is a person on the wire.
type userObject struct {
	Object    string `json:"object"`
	ID        string `json:"id"`
	Name      string `json:"name"`
	Role      string `json:"role"`
	State     string `json:"state"`
	CreatedAt int64  `json:"created_at"`
	UpdatedAt int64  `json:"updated_at"`
	// Password is a generated password, in the answer to the creation that made it only.
	Password string `json:"password,omitempty"`
}

func wireUser(p people.Person) userObject {
	return userObject{Object: "user", ID: p.ID, Name: p.Name, Role: string(p.Role), State: string(p.State),
		CreatedAt: p.CreatedAt.Unix(), UpdatedAt: p.UpdatedAt.Unix()}
}

func (h peopleHandlers) list(c *gin.Context) error {
	all, err := h.people.List(c.Request.Context())
	if err != nil {
		return err
	}
	data := make([]userObject, 0, len(all))
	for _, p := range all {
		data = append(data, wireUser(p))
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": data})
	return nil
}

func (h peopleHandlers) create(c *gin.Context) error {
	var req struct {
		Name     string  `json:"name"`
		Password *string `json:"password"`
		Role     string  `json:"role"`
	}
	if err := decodeStrict(c, &req, `{"name": "...", "password": "...", "role": "member"}`); err != nil {
		return err
	}
	var generated string
	password := ""
	if req.Password == nil {
		generated = people.GeneratePassword()
		password = generated
	} else {
		password = *req.Password
	}
	p, err := h.people.Create(c.Request.Context(), actor(c), people.NewPerson{Name: req.Name, Password: password, Role: people.Role(req.Role)})
	if err != nil {
		return err
	}
	o := wireUser(p)
	o.Password = generated
	c.JSON(http.StatusCreated, o)
	return nil
}

func (h peopleHandlers) update(c *gin.Context) error {
	var req struct {
		Role     *string `json:"role"`
		State    *string `json:"state"`
		Password *string `json:"password"`
		quotaFields
	}
	if err := decodeStrict(c, &req, `{"role": "admin"|"member", "state": "active"|"disabled", "password": "...", "daily_tokens": N|null, "monthly_tokens": N|null}`); err != nil {
		return err
	}
	var ch people.Change
	if req.Role != nil {
		r := people.Role(*req.Role)
		ch.Role = &r
	}
	if req.State != nil {
		s := people.State(*req.State)
		ch.State = &s
	}
	ch.Password = req.Password
	p, err := h.people.Update(c.Request.Context(), actor(c), strings.TrimSpace(c.Param("id")), ch)
	if err != nil {
		return err
	}
	o, err := h.userWithQuota(c, p, req.quotaFields)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, o)
	return nil
}

// auditObject is an audit entry on the wire.
type auditObject struct {
	Object string          `json:"object"`
	ID     int64           `json:"id"`
	At     int64           `json:"at"`
	Actor  auditActor      `json:"actor"`
	Action string          `json:"action"`
	Target string          `json:"target"`
	Detail json.RawMessage `json:"detail"`
}

type auditActor struct {
	UserID string `json:"user_id"`
	User   string `json:"user"`
	Key    string `json:"key"`
}

func (h peopleHandlers) audit(c *gin.Context) error {
	limit, err := positiveQuery(c, "limit")
	if err != nil {
		return err
	}
	before, err := positiveQuery(c, "before")
	if err != nil {
		return err
	}
	q := store.AuditQuery{Limit: int(min(limit, 1000)), Before: before}
	q.Action = c.Query("action")
	entries, err := h.people.Audit(c.Request.Context(), q)
	if err != nil {
		return err
	}
	data := make([]auditObject, 0, len(entries))
	for _, e := range entries {
		data = append(data, auditObject{Object: "audit_entry", ID: e.ID, At: e.At.Unix(), Action: e.Action, Target: e.Target, Detail: e.Detail,
			Actor: auditActor{UserID: e.ActorPerson, User: e.ActorName, Key: e.ActorKey}})
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": data})
	return nil
}

func (h peopleHandlers) createKey(c *gin.Context) error {
	nk, err := decodeNewKey(c)
	if err != nil {
		return err
	}
	key, info, err := h.keys.keys.Create(c.Request.Context(), nk)
	if err != nil {
		return err
	}
	detail := map[string]any{"id": info.ID, "admin": info.Admin}
	if info.Person != nil {
		detail["user"] = info.Person.Name
	}
	if err := h.people.Record(c.Request.Context(), actor(c), "key.create", info.Name, detail); err != nil {
		return err
	}
	o := wireKey(info)
	o.Key = key
	c.JSON(http.StatusCreated, o)
	return nil
}

func (h peopleHandlers) revokeKey(c *gin.Context) error {
	info, err := h.keys.keys.Revoke(c.Request.Context(), strings.TrimSpace(c.Param("id")))
	if err != nil {
		return err
	}
	if err := h.people.Record(c.Request.Context(), actor(c), "key.revoke", info.Name, map[string]any{"id": info.ID}); err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"id": info.ID, "object": "api_key.deleted", "deleted": true})
	return nil
}

// positiveQuery reads a query parameter that is a whole number above 0; 0 when it is absent.
func positiveQuery(c *gin.Context, name string) (int64, error) {
	v := c.Query(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return 0, &dialect.Refusal{Status: http.StatusBadRequest, Param: name, Message: fmt.Sprintf("%s is a whole number above 0, got %q", name, v)}
	}
	return n, nil
}
