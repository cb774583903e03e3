package server

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/server/dialect"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/prefixes"
)

// prefixRoutes serves team mode's shared prefixes, admin only, in OpenAI's error shape; every
// write is audited:
//
//	GET    /v1/admin/shared-prefixes       {"object": "list", "data": [shared_prefix...]}
//	POST   /v1/admin/shared-prefixes       {"text", "name"?, "model"?} → 201 the shared prefix
//	DELETE /v1/admin/shared-prefixes/{id}  → {"id", "object": "shared_prefix.deleted", "deleted": true}
//
// A shared prefix is {"object": "shared_prefix", "id", "name", "model", "text", "created_by",
// "created_at"} (Unix seconds); "model" "" is every model.
func prefixRoutes(r *gin.Engine, s *prefixes.Service, ppl *people.Service) {
	h := prefixHandlers{s, ppl}
	r.GET("/v1/admin/shared-prefixes", h.wrap(h.list))
	r.POST("/v1/admin/shared-prefixes", h.wrap(h.add))
	r.DELETE("/v1/admin/shared-prefixes/:id", h.wrap(h.remove))
}

type prefixHandlers struct {
	prefixes *prefixes.Service
	people   *people.Service // the audit log; nil audits nothing
}

// by is the request's sender as the shared prefixes see them: named, and audited as theirs.
func (h prefixHandlers) by(c *gin.Context) prefixes.By {
	a := actor(c)
	by := prefixes.By{Name: cmp.Or(a.PersonName, a.Key, a.Via)}
	if h.people != nil {
		by.Record = func(ctx context.Context, action, target string, detail map[string]any) error {
			return h.people.Record(ctx, a, action, target, detail)
		}
	}
	return by
}

// wrap checks for an admin and renders the handler's error.
func (h prefixHandlers) wrap(fn func(*gin.Context) error) gin.HandlerFunc {
	return adminOnly(prefixError, fn)
}

// prefixError maps the shared prefixes' errors to refusals.
func prefixError(err error) error {
	switch {
	case errors.Is(err, prefixes.ErrInvalid):
		return &dialect.Refusal{Status: http.StatusBadRequest, Message: err.Error()}
	case errors.Is(err, prefixes.ErrNotFound):
		return &dialect.Refusal{Status: http.StatusNotFound, Code: "shared_prefix_not_found", Message: err.Error()}
	}
	return err
}

// prefixObject is a shared prefix on the wire.
type prefixObject struct {
	Object    string `json:"object"`
	ID        string `json:"id"`
	Name      string `json:"name"`
	Model     string `json:"model"`
	Text      string `json:"text"`
	CreatedBy string `json:"created_by"`
	CreatedAt int64  `json:"created_at"`
}

func wirePrefix(p prefixes.Prefix) prefixObject {
	return prefixObject{Object: "shared_prefix", ID: p.ID, Name: p.Name, Model: p.Model, Text: p.Text,
		CreatedBy: p.CreatedBy, CreatedAt: p.CreatedAt.Unix()}
}

func (h prefixHandlers) list(c *gin.Context) error {
	all, err := h.prefixes.List(c.Request.Context())
	if err != nil {
		return err
	}
	data := make([]prefixObject, 0, len(all))
	for _, p := range all {
		data = append(data, wirePrefix(p))
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": data})
	return nil
}

func (h prefixHandlers) add(c *gin.Context) error {
	var req struct {
		Text  string `json:"text"`
		Name  string `json:"name"`
		Model string `json:"model"`
	}
	if err := decodeStrict(c, &req, `{"text": "You are the team's assistant...", "name": "team", "model": "..."}`); err != nil {
		return err
	}
	p, err := h.prefixes.Add(c.Request.Context(), h.by(c), prefixes.NewPrefix{Text: req.Text, Name: req.Name, Model: req.Model})
	if err != nil {
		return err
	}
	c.JSON(http.StatusCreated, wirePrefix(p))
	return nil
}

func (h prefixHandlers) remove(c *gin.Context) error {
	p, err := h.prefixes.Remove(c.Request.Context(), h.by(c), strings.TrimSpace(c.Param("id")))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"id": p.ID, "object": "shared_prefix.deleted", "deleted": true})
	return nil
}
