package web

import (
	"net/http"

	"github.com/superfluid/superfluid/runtime/backends"
	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/loadhistory"
)

// The admin's runtime: what the machine offers and runs now, the load history, and starting
// or stopping a lane's engine by hand.
func (a *API) adminRuntimeRoutes() {
	Handle(a, http.MethodGet, "/api/admin/runtime", adminMeta("runtime", "Devices, backends, lanes and the loaded models"), a.adminRuntime)
	Handle(a, http.MethodGet, "/api/admin/runtime/history", Meta{Summary: "Load history: loads, failed loads, unloads, lane switches, newest first",
		Tag: "admin runtime", Access: Admin, Query: adminHistoryQuery{}}, a.adminHistory)
	Handle(a, http.MethodPost, "/api/admin/runtime/manual", adminMeta("runtime",
		"Start (load the model on the lane: a switch) or stop (unload a local lane's model now; the next request loads it again) by hand"), a.adminManual)
}

// AdminRuntime is GET /api/admin/runtime.
type AdminRuntime struct {
	Devices  []lanes.Device     `json:"devices"`
	Backends []backends.Backend `json:"backends"`
	Lanes    []AdminLane        `json:"lanes"`
	Models   []AdminLoadedModel `json:"models"`
}

// AdminLoadedModel is a model the core has loaded (or is loading, or holds requests for).
type AdminLoadedModel struct {
	ID    string `json:"id"`
	State string `json:"state" doc:"loading, loaded, unloading"`
	// MemoryBytes is the estimated memory the loaded model takes.
	MemoryBytes   int64    `json:"memory_bytes"`
	Engine        string   `json:"engine" doc:"the runtime it runs on (cpu, cuda, vulkan, ...), or the forwarding engine"`
	ContextLength int      `json:"context_length"`
	Parallel      int      `json:"parallel"`
	Inflight      int      `json:"inflight"`
	Waiting       int      `json:"waiting" doc:"generations waiting for one of its lanes"`
	Lanes         []string `json:"lanes" doc:"the lanes serving it"`
	ExpiresAt     *int64   `json:"expires_at" doc:"when it unloads if idle (Unix seconds); null: not scheduled"`
}

func (a *API) adminRuntime(r *Request[NoBody]) (AdminRuntime, error) {
	out := AdminRuntime{Devices: a.cfg.Devices, Backends: a.cfg.Backends, Lanes: []AdminLane{}, Models: []AdminLoadedModel{}}
	if out.Devices == nil {
		out.Devices = []lanes.Device{}
	}
	if out.Backends == nil {
		out.Backends = []backends.Backend{}
	}
	serving := map[string][]string{}
	if a.cfg.Lanes != nil {
		all, err := a.cfg.Lanes.List(r.Ctx)
		if err != nil {
			return AdminRuntime{}, err
		}
		for _, s := range all {
			out.Lanes = append(out.Lanes, adminLaneOf(s))
			serving[s.Model] = append(serving[s.Model], s.Name)
		}
	}
	if a.cfg.Core != nil {
		for _, m := range a.cfg.Core.Models() {
			st := a.cfg.Core.ModelStatus(m)
			loaded := m.Loaded()
			if !loaded && st.State != "loading" && st.State != "unloading" && m.Inflight() == 0 {
				continue
			}
			lm := AdminLoadedModel{ID: m.ID, State: st.State, MemoryBytes: st.Need, Inflight: m.Inflight(), Waiting: m.Waiting(),
				Lanes: nonNil(serving[m.ID]), ExpiresAt: unixOrNil(st.ExpiresAt)}
			if loaded {
				info := m.Info()
				lm.Engine, lm.ContextLength, lm.Parallel = info.Runtime, info.ContextLength, info.Parallel
				if lm.State == "" || lm.State == "unloaded" {
					lm.State = "loaded" // a model of a fixed set (or a lane's engine) reports no catalog state
				}
			}
			out.Models = append(out.Models, lm)
		}
	}
	return out, nil
}

// adminHistoryQuery documents GET /api/admin/runtime/history's query.
type adminHistoryQuery struct {
	Limit  int    `form:"limit" minimum:"1" maximum:"1000" doc:"at most this many (default 100)"`
	Before string `form:"before" doc:"only the events before this time (RFC 3339 or Unix seconds): the next page"`
}

// AdminHistoryEvent is one event of the load history (at in Unix seconds).
type AdminHistoryEvent struct {
	At     int64  `json:"at"`
	Event  string `json:"event" enum:"loading,loaded,failed,unloaded,create,switch,remove"`
	Lane   string `json:"lane"`
	Model  string `json:"model"`
	Detail string `json:"detail"`
	// AtMillis is At in milliseconds, to order events of one second and to page.
	AtMillis int64 `json:"at_ms"`
}

func (a *API) adminHistory(r *Request[NoBody]) (List[AdminHistoryEvent], error) {
	if a.cfg.Store == nil {
		return List[AdminHistoryEvent]{}, unavailable("store")
	}
	limit, err := queryInt(r.Gin, "limit", 1, 1000, 100)
	if err != nil {
		return List[AdminHistoryEvent]{}, err
	}
	before, err := queryTime(r.Gin, "before")
	if err != nil {
		return List[AdminHistoryEvent]{}, err
	}
	entries, err := loadhistory.List(r.Ctx, a.cfg.Store, limit, before)
	if err != nil {
		return List[AdminHistoryEvent]{}, err
	}
	out := make([]AdminHistoryEvent, 0, len(entries))
	for _, e := range entries {
		out = append(out, AdminHistoryEvent{At: e.At.Unix(), AtMillis: e.At.UnixMilli(), Event: e.Event, Lane: e.Lane, Model: e.Model, Detail: e.Detail})
	}
	return ListOf(out), nil
}

// AdminManual is the body of POST /api/admin/runtime/manual.
type AdminManual struct {
	Action string `json:"action" required:"true" enum:"start,stop"`
	Lane   string `json:"lane" required:"true" minLength:"1" doc:"the lane's name or id"`
	Model  string `json:"model" doc:"start: the model to load (default: the lane's own)"`
}

func (a *API) adminManual(r *Request[AdminManual]) (AdminLane, error) {
	m, err := a.lanesOrRefuse()
	if err != nil {
		return AdminLane{}, err
	}
	lane, err := findLane(r, m, r.Body.Lane)
	if err != nil {
		return AdminLane{}, err
	}
	if r.Body.Action == "start" {
		model := r.Body.Model
		if model == "" {
			model = lane.Model
		}
		st, err := m.Switch(r.Ctx, lane.ID, model) // audited by the manager as lane.switch
		if err != nil {
			return AdminLane{}, err
		}
		return adminLaneOf(st), nil
	}
	if lanes.Kind(lane.Engine) != lanes.Local || a.cfg.Core == nil {
		return AdminLane{}, Errorf(http.StatusBadRequest, "invalid_value", "lane",
			"lane %s runs a %s engine: only a local lane's model is stopped by hand; switch or remove the lane instead", lane.Name, lane.Engine)
	}
	if r.Body.Model != "" && r.Body.Model != lane.Model {
		return AdminLane{}, Errorf(http.StatusBadRequest, "invalid_value", "model", "lane %s serves %s, not %s", lane.Name, lane.Model, r.Body.Model)
	}
	if _, err := a.cfg.Core.UnloadModel(r.Ctx, lane.Model); err != nil {
		return AdminLane{}, err
	}
	if err := a.cfg.People.Record(r.Ctx, actorOf(r), "runtime.stop", lane.Name, map[string]any{"id": lane.ID, "model": lane.Model}); err != nil {
		return AdminLane{}, err
	}
	after, err := findLane(r, m, lane.ID)
	if err != nil {
		return AdminLane{}, err
	}
	return adminLaneOf(after), nil
}

// findLane is the lane named (or with id) nameOrID.
func findLane[In any](r *Request[In], m *lanes.Manager, nameOrID string) (lanes.Status, error) {
	all, err := m.List(r.Ctx)
	if err != nil {
		return lanes.Status{}, err
	}
	for _, s := range all {
		if s.ID == nameOrID || s.Name == nameOrID {
			return s, nil
		}
	}
	return lanes.Status{}, Errorf(http.StatusNotFound, "lane_not_found", "lane", "no lane is named %q or has that id", nameOrID)
}
