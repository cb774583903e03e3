package server

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/server/dialect"
	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/store"
)

// laneRoutes serves team mode's lanes, admin only, in OpenAI's error shape:
//
//	GET    /v1/admin/lanes            {"object": "list", "data": [lane...], "devices": [{"name", "gpu"}...]}
//	POST   /v1/admin/lanes            {"name", "device", "engine", "model", "url"?, "command"?, "served_model"?, "upstream_key"?,
//	                                   "header_timeout"?, "idle_timeout"? (seconds; an openai/command engine's reply bounds)}
//	                                  → 201 the lane
//	PATCH  /v1/admin/lanes/{id|name}  {"model"} → 200 the lane, switching (running requests drain first)
//	DELETE /v1/admin/lanes/{id|name}  drains, then → {"id", "object": "lane.deleted", "deleted": true}
//
// A lane is {"object": "lane", "id", "name", "device", "engine", "model", "url", "command",
// "served_model", "has_key", "state", "inflight", "error", "created_at", "updated_at"} (Unix
// seconds); the upstream key is write-only and never in an answer.
func laneRoutes(r *gin.Engine, m *lanes.Manager, devices []lanes.Device) {
	h := laneHandlers{m, devices}
	r.GET("/v1/admin/lanes", h.wrap(h.list))
	r.POST("/v1/admin/lanes", h.wrap(h.add))
	r.PATCH("/v1/admin/lanes/:id", h.wrap(h.switchModel))
	r.DELETE("/v1/admin/lanes/:id", h.wrap(h.remove))
}

type laneHandlers struct {
	lanes   *lanes.Manager
	devices []lanes.Device
}

// wrap checks for an admin and renders the handler's error.
func (h laneHandlers) wrap(fn func(*gin.Context) error) gin.HandlerFunc {
	return adminOnly(laneError, fn)
}

// laneError maps the manager's errors to refusals.
func laneError(err error) error {
	refuse := func(status int, code, param string) error {
		return &dialect.Refusal{Status: status, Code: code, Param: param, Message: err.Error()}
	}
	switch {
	case errors.Is(err, lanes.ErrLaneExists):
		return refuse(http.StatusConflict, "lane_exists", "name")
	case errors.Is(err, lanes.ErrLaneNotFound):
		return refuse(http.StatusNotFound, "lane_not_found", "")
	case errors.Is(err, lanes.ErrUnknownDevice):
		return refuse(http.StatusBadRequest, "unknown_device", "device")
	case errors.Is(err, lanes.ErrUnknownEngine):
		return refuse(http.StatusBadRequest, "unknown_engine", "engine")
	case errors.Is(err, lanes.ErrUnknownModel):
		return refuse(http.StatusBadRequest, "model_not_found", "model")
	case errors.Is(err, lanes.ErrInvalidLane):
		return refuse(http.StatusBadRequest, "", "")
	}
	return err
}

// laneObject is a lane on the wire.
type laneObject struct {
	Object      string `json:"object"`
	ID          string `json:"id"`
	Name        string `json:"name"`
	Device      string `json:"device"`
	Engine      string `json:"engine"`
	Model       string `json:"model"`
	URL         string `json:"url,omitempty"`
	Command     string `json:"command,omitempty"`
	ServedModel string `json:"served_model,omitempty"`
	// HeaderTimeout and IdleTimeout are seconds, 0 (left out) for the engine's defaults.
	HeaderTimeout int         `json:"header_timeout,omitempty"`
	IdleTimeout   int         `json:"idle_timeout,omitempty"`
	HasKey        bool        `json:"has_key"`
	State         lanes.State `json:"state"`
	Inflight      int         `json:"inflight"`
	Error         string      `json:"error,omitempty"`
	CreatedAt     int64       `json:"created_at"`
	UpdatedAt     int64       `json:"updated_at"`
}

// redactedURL is an upstream URL with its password masked (basic auth in front of the model
// server is write-only, as the upstream key is: has_key); "" stays "".
func redactedURL(u string) string {
	if p, err := url.Parse(u); err == nil && p.User != nil {
		return p.Redacted()
	}
	return u
}

func wireLane(s lanes.Status) laneObject {
	return laneObject{Object: "lane", ID: s.ID, Name: s.Name, Device: s.Device, Engine: s.Engine, Model: s.Model,
		URL: redactedURL(s.Config.URL), Command: s.Config.Command, ServedModel: s.Config.ServedModel, HasKey: s.HasKey,
		HeaderTimeout: s.Config.HeaderTimeout, IdleTimeout: s.Config.IdleTimeout,
		State: s.State, Inflight: s.Inflight, Error: s.Error, CreatedAt: s.CreatedAt.Unix(), UpdatedAt: s.UpdatedAt.Unix()}
}

func (h laneHandlers) list(c *gin.Context) error {
	all, err := h.lanes.List(c.Request.Context())
	if err != nil {
		return err
	}
	data := make([]laneObject, 0, len(all))
	for _, s := range all {
		data = append(data, wireLane(s))
	}
	devices := h.devices
	if devices == nil {
		devices = []lanes.Device{}
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": data, "devices": devices})
	return nil
}

// addLaneRequest is the body of POST /v1/admin/lanes.
type addLaneRequest struct {
	Name        string `json:"name"`
	Device      string `json:"device"`
	Engine      string `json:"engine"`
	Model       string `json:"model"`
	URL         string `json:"url"`
	Command     string `json:"command"`
	ServedModel string `json:"served_model"`
	UpstreamKey string `json:"upstream_key"`
	// HeaderTimeout and IdleTimeout are seconds (store.LaneConfig).
	HeaderTimeout int `json:"header_timeout"`
	IdleTimeout   int `json:"idle_timeout"`
}

func (h laneHandlers) add(c *gin.Context) error {
	var req addLaneRequest
	if err := decodeStrict(c, &req, `{"name", "device", "engine", "model", ...}`); err != nil {
		return err
	}
	st, err := h.lanes.Add(c.Request.Context(), lanes.NewLane{Name: req.Name, Device: req.Device, Engine: lanes.Kind(req.Engine),
		Model: req.Model, UpstreamKey: req.UpstreamKey,
		Config: store.LaneConfig{URL: req.URL, Command: req.Command, ServedModel: req.ServedModel,
			HeaderTimeout: req.HeaderTimeout, IdleTimeout: req.IdleTimeout}})
	if err != nil {
		return err
	}
	c.JSON(http.StatusCreated, wireLane(st))
	return nil
}

func (h laneHandlers) switchModel(c *gin.Context) error {
	var req struct {
		Model string `json:"model"`
	}
	if err := decodeStrict(c, &req, `{"model": "..."}`); err != nil {
		return err
	}
	st, err := h.lanes.Switch(c.Request.Context(), strings.TrimSpace(c.Param("id")), req.Model)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, wireLane(st))
	return nil
}

func (h laneHandlers) remove(c *gin.Context) error {
	id := strings.TrimSpace(c.Param("id"))
	if err := h.lanes.Remove(c.Request.Context(), id); err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"id": id, "object": "lane.deleted", "deleted": true})
	return nil
}
