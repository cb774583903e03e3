package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core/qos"
	"github.com/superfluid/superfluid/server/dialect"
	"github.com/superfluid/superfluid/server/reqbody"
	"github.com/superfluid/superfluid/server/web"
)

// keyRoutes serves the keys, in the error shape the router's table gives /v1/keys (OpenAI's);
// every route is an admin route:
//
//	GET    /v1/keys          {"object": "list", "data": [key...]} (?revoked=true adds revoked keys)
//	POST   /v1/keys          {"name", "admin"?, "models"?, "qos"?, "rpm"?, "tpm"?, "concurrency"?, "origins"?}
//	                         → 201 the key object with "key": "sk-sf-..." (the only time it is shown)
//	DELETE /v1/keys/{name or id} → {"id", "object": "api_key.deleted", "deleted": true}
//
// A key object is {"object": "api_key", "id", "name", "prefix", "admin", "models", "qos",
// "rpm", "tpm", "concurrency", "origins", "source", "created_at", "revoked_at"} with times in
// Unix seconds (null when not set).
func keyRoutes(r *gin.Engine, keys *auth.Keyring) {
	h := keyHandlers{keys}
	r.GET("/v1/keys", h.wrap(h.list))
	r.POST("/v1/keys", h.wrap(h.create))
	r.DELETE("/v1/keys/:id", h.wrap(h.revoke))
}

type keyHandlers struct{ keys *auth.Keyring }

// wrap checks for an admin and renders the handler's error in the shape of the path's dialect.
func (h keyHandlers) wrap(fn func(*gin.Context) error) gin.HandlerFunc {
	return adminOnly(keyError, fn)
}

// keyError maps the keyring's errors to refusals.
func keyError(err error) error {
	var r *dialect.Refusal
	switch {
	case errors.As(err, &r):
		return r
	case errors.Is(err, auth.ErrInvalidKey):
		return &dialect.Refusal{Status: http.StatusBadRequest, Message: err.Error()}
	case errors.Is(err, auth.ErrKeyExists):
		return &dialect.Refusal{Status: http.StatusConflict, Code: "key_exists", Param: "name", Message: err.Error()}
	case errors.Is(err, auth.ErrKeyNotFound):
		return &dialect.Refusal{Status: http.StatusNotFound, Code: "key_not_found", Message: err.Error()}
	case errors.Is(err, auth.ErrConfiguredKey):
		return &dialect.Refusal{Status: http.StatusConflict, Code: "key_configured", Message: err.Error()}
	default:
		return err
	}
}

// keyObject is a key on the wire: the same object the web API shows (server/web), one type
// for both.
type keyObject = web.Key

// wireKey is k on the wire.
func wireKey(k auth.Info) keyObject { return web.KeyOf(k) }

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (h keyHandlers) list(c *gin.Context) error {
	infos, err := h.keys.List(c.Request.Context(), c.Query("revoked") == "true")
	if err != nil {
		return err
	}
	data := make([]keyObject, 0, len(infos))
	for _, k := range infos {
		data = append(data, wireKey(k))
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": data})
	return nil
}

// createRequest is the body of POST /v1/keys.
type createRequest struct {
	Name        string   `json:"name"`
	Admin       bool     `json:"admin"`
	Models      []string `json:"models"`
	QoS         string   `json:"qos"`
	RPM         int      `json:"rpm"`
	TPM         int      `json:"tpm"`
	Concurrency int      `json:"concurrency"`
	Origins     []string `json:"origins"`
	// User is the name or id of the person the key is for (team mode: an sk-ss- key).
	User string `json:"user"`
}

func (h keyHandlers) create(c *gin.Context) error {
	nk, err := decodeNewKey(c)
	if err != nil {
		return err
	}
	key, info, err := h.keys.Create(c.Request.Context(), nk)
	if err != nil {
		return err
	}
	o := wireKey(info)
	o.Key = key
	c.JSON(http.StatusCreated, o)
	return nil
}

// decodeNewKey reads the body of a key's creation.
func decodeNewKey(c *gin.Context) (auth.NewKey, error) {
	data, err := reqbody.Read(c.Request)
	if err != nil {
		return auth.NewKey{}, &dialect.Refusal{Status: http.StatusBadRequest, Message: err.Error()}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var req createRequest
	if err := dec.Decode(&req); err != nil {
		return auth.NewKey{}, &dialect.Refusal{Status: http.StatusBadRequest,
			Message: fmt.Sprintf("the body is not a key request (%v); send {\"name\": \"...\", \"admin\": false, \"models\": [...]}", err)}
	}
	q, err := qos.Parse(req.QoS)
	if err != nil {
		return auth.NewKey{}, &dialect.Refusal{Status: http.StatusBadRequest, Param: "qos", Message: err.Error()}
	}
	return auth.NewKey{Name: req.Name, Admin: req.Admin, Models: req.Models, QoS: q, Origins: req.Origins, Person: req.User,
		Limits: auth.Limits{RPM: req.RPM, TPM: req.TPM, Concurrency: req.Concurrency}}, nil
}

func (h keyHandlers) revoke(c *gin.Context) error {
	info, err := h.keys.Revoke(c.Request.Context(), strings.TrimSpace(c.Param("id")))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"id": info.ID, "object": "api_key.deleted", "deleted": true})
	return nil
}
