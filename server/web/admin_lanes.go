package web

import (
	"net/http"
	"net/url"

	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/store"
)

// The admin's lanes, as /v1/admin/lanes serves them (server/lanes_routes.go) over the same
// lanes.Manager, which audits every write (lane.create, lane.switch, lane.remove).
func (a *API) adminLaneRoutes() {
	Handle(a, http.MethodGet, "/api/admin/lanes", adminMeta("lanes", "The lanes with their state, and the devices"), a.adminLanes)
	Handle(a, http.MethodPost, "/api/admin/lanes", Meta{Summary: "Add a lane", Tag: "admin lanes", Access: Admin, Status: http.StatusCreated}, a.adminAddLane)
	Handle(a, http.MethodPatch, "/api/admin/lanes/:id", adminMeta("lanes", "Switch a lane's model (running requests drain first)"), a.adminSwitchLane)
	Handle(a, http.MethodDelete, "/api/admin/lanes/:id", adminMeta("lanes", "Remove a lane (after its requests drain)"), a.adminRemoveLane)
}

// AdminLane is a lane on the wire, as /v1/admin/lanes shows one (times in Unix seconds; the
// upstream key is write-only: has_key says whether one is stored).
type AdminLane struct {
	Object        string `json:"object" enum:"lane"`
	ID            string `json:"id"`
	Name          string `json:"name"`
	Device        string `json:"device"`
	Engine        string `json:"engine" enum:"local,openai,command"`
	Model         string `json:"model"`
	URL           string `json:"url,omitempty"`
	Command       string `json:"command,omitempty"`
	ServedModel   string `json:"served_model,omitempty"`
	HeaderTimeout int    `json:"header_timeout,omitempty"`
	IdleTimeout   int    `json:"idle_timeout,omitempty"`
	HasKey        bool   `json:"has_key"`
	State         string `json:"state" enum:"serving,switching,unavailable"`
	Inflight      int    `json:"inflight"`
	Error         string `json:"error,omitempty"`
	CreatedAt     int64  `json:"created_at"`
	UpdatedAt     int64  `json:"updated_at"`
}

// redactedURL masks the password of basic auth in an upstream URL (write-only, as the key is).
func redactedURL(u string) string {
	if p, err := url.Parse(u); err == nil && p.User != nil {
		return p.Redacted()
	}
	return u
}

func adminLaneOf(s lanes.Status) AdminLane {
	return AdminLane{Object: "lane", ID: s.ID, Name: s.Name, Device: s.Device, Engine: s.Engine, Model: s.Model,
		URL: redactedURL(s.Config.URL), Command: s.Config.Command, ServedModel: s.Config.ServedModel, HasKey: s.HasKey,
		HeaderTimeout: s.Config.HeaderTimeout, IdleTimeout: s.Config.IdleTimeout,
		State: string(s.State), Inflight: s.Inflight, Error: s.Error, CreatedAt: s.CreatedAt.Unix(), UpdatedAt: s.UpdatedAt.Unix()}
}

// AdminLanes is the lane list with the machine's devices.
type AdminLanes struct {
	Object  string         `json:"object" enum:"list"`
	Data    []AdminLane    `json:"data"`
	Devices []lanes.Device `json:"devices"`
}

func (a *API) lanesOrRefuse() (*lanes.Manager, error) {
	if a.cfg.Lanes == nil {
		return nil, unavailable("lanes")
	}
	return a.cfg.Lanes, nil
}

func (a *API) adminLanes(r *Request[NoBody]) (AdminLanes, error) {
	m, err := a.lanesOrRefuse()
	if err != nil {
		return AdminLanes{}, err
	}
	all, err := m.List(r.Ctx)
	if err != nil {
		return AdminLanes{}, err
	}
	out := AdminLanes{Object: "list", Data: make([]AdminLane, 0, len(all)), Devices: a.cfg.Devices}
	for _, s := range all {
		out.Data = append(out.Data, adminLaneOf(s))
	}
	if out.Devices == nil {
		out.Devices = []lanes.Device{}
	}
	return out, nil
}

// AdminNewLane is the body of POST /api/admin/lanes (as POST /v1/admin/lanes).
type AdminNewLane struct {
	Name        string `json:"name" required:"true" minLength:"1" maxLength:"64"`
	Device      string `json:"device" required:"true" minLength:"1"`
	Engine      string `json:"engine" required:"true" enum:"local,openai,command"`
	Model       string `json:"model"`
	URL         string `json:"url" doc:"an openai lane: the server's base URL"`
	Command     string `json:"command" doc:"a command lane: the server's command line"`
	ServedModel string `json:"served_model"`
	UpstreamKey string `json:"upstream_key" doc:"an openai lane: the key it sends (write-only)"`
	// HeaderTimeout and IdleTimeout are seconds (store.LaneConfig).
	HeaderTimeout int `json:"header_timeout" minimum:"0"`
	IdleTimeout   int `json:"idle_timeout" minimum:"0"`
}

func (a *API) adminAddLane(r *Request[AdminNewLane]) (AdminLane, error) {
	m, err := a.lanesOrRefuse()
	if err != nil {
		return AdminLane{}, err
	}
	b := r.Body
	st, err := m.Add(r.Ctx, lanes.NewLane{Name: b.Name, Device: b.Device, Engine: lanes.Kind(b.Engine), Model: b.Model, UpstreamKey: b.UpstreamKey,
		Config: store.LaneConfig{URL: b.URL, Command: b.Command, ServedModel: b.ServedModel, HeaderTimeout: b.HeaderTimeout, IdleTimeout: b.IdleTimeout}})
	if err != nil {
		return AdminLane{}, err
	}
	return adminLaneOf(st), nil
}

// AdminLaneSwitch is the body of PATCH /api/admin/lanes/{id}.
type AdminLaneSwitch struct {
	Model string `json:"model" doc:"the model the lane serves next (a catalog id for a local lane)"`
}

func (a *API) adminSwitchLane(r *Request[AdminLaneSwitch]) (AdminLane, error) {
	m, err := a.lanesOrRefuse()
	if err != nil {
		return AdminLane{}, err
	}
	st, err := m.Switch(r.Ctx, r.Param("id"), r.Body.Model)
	if err != nil {
		return AdminLane{}, err
	}
	return adminLaneOf(st), nil
}

func (a *API) adminRemoveLane(r *Request[NoBody]) (Deleted, error) {
	m, err := a.lanesOrRefuse()
	if err != nil {
		return Deleted{}, err
	}
	id := r.Param("id")
	if err := m.Remove(r.Ctx, id); err != nil {
		return Deleted{}, err
	}
	return Deleted{ID: id, Object: "lane.deleted", Deleted: true}, nil
}
