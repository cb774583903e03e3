// Package loadhistory is the runtime's load history for the admin: model loads begun, loads
// done, failed loads and unloads (the core's model events, persisted in the store's
// runtime_events table as they happen, so the history outlives a restart) and lane writes
// (created, switched — by an admin or a booking — and removed), which the audit log already
// keeps and List reads from there rather than storing twice. No gin: the web API's
// GET /api/admin/runtime/history serves List.
package loadhistory

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/store"
)

// Entry is one event of the history.
type Entry struct {
	At time.Time `json:"at"`
	// Event is loading, loaded, failed, unloaded (a model), or create, switch, remove (a lane).
	Event string `json:"event"`
	// Lane names the lane (a lane event) or the lanes serving the model then ("" for none).
	Lane  string `json:"lane"`
	Model string `json:"model"`
	// Detail says the rest: a failure's reason, who switched a lane and from what.
	Detail string `json:"detail"`
}

// Events is where Watch reads the model events (a *core.Service).
type Events interface {
	ModelEvents(buffer int) (<-chan core.ModelEvent, func())
	EventModelID(name string) string
}

// recorded maps the model event kinds the history keeps to their names in it.
var recorded = map[string]string{
	core.ModelEventLoading:  "loading",
	core.ModelEventLoaded:   "loaded",
	core.ModelEventFailed:   "failed",
	core.ModelEventUnloaded: "unloaded",
}

// Watch stores svc's model events in st until stop is called (stop may be called more than
// once). lanesOf, when set, names the lanes serving a model (by catalog id) when its event
// comes. A store write that fails is logged; the watch goes on.
func Watch(svc Events, st *store.Store, lanesOf func(model string) []string) (stop func()) {
	events, unsubscribe := svc.ModelEvents(256)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					return
				}
				name, keep := recorded[ev.Kind]
				if !keep {
					continue
				}
				e := store.RuntimeEvent{Event: name, Model: svc.EventModelID(ev.Model), Detail: ev.Err}
				if lanesOf != nil {
					e.Lane = strings.Join(lanesOf(e.Model), ",")
				}
				if _, err := st.AppendRuntimeEvent(context.Background(), e); err != nil {
					slog.Warn("load history: an event was not stored", "event", name, "model", e.Model, "err", err)
				}
			case <-quit:
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			unsubscribe()
			close(quit)
			<-done
		})
	}
}

// LanesServing returns a lanesOf for Watch over m: the names of its lanes whose row names the
// model.
func LanesServing(m *lanes.Manager) func(model string) []string {
	if m == nil {
		return nil
	}
	return func(model string) []string {
		var out []string
		for _, l := range m.Lanes() {
			if s := l.Status(); s.Model == model {
				out = append(out, s.Name)
			}
		}
		return out
	}
}

// laneActions are the audit actions List reads, with their event names.
var laneActions = map[string]string{lanes.ActionAdd: "create", lanes.ActionSwitch: "switch", lanes.ActionRemove: "remove"}

// List returns up to limit entries (1..1000; 0 is 100), newest first, only those before the
// given time when it is set.
func List(ctx context.Context, st *store.Store, limit int, before time.Time) ([]Entry, error) {
	limit = min(cmp.Or(max(limit, 0), 100), 1000)
	evs, err := st.RuntimeEvents(ctx, limit, before)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(evs))
	for _, e := range evs {
		out = append(out, Entry{At: e.At, Event: e.Event, Lane: e.Lane, Model: e.Model, Detail: e.Detail})
	}
	// The audit log pages by id, not time; its entries are appended in time order, so reading
	// each action's newest entries and dropping those not before `before` is the same set.
	for action, name := range laneActions {
		var page int64
		kept := 0
		for {
			entries, err := st.Audit(ctx, store.AuditQuery{Action: action, Limit: limit, Before: page})
			if err != nil {
				return nil, err
			}
			for _, a := range entries {
				page = a.ID
				if !before.IsZero() && !a.At.Before(before) {
					continue
				}
				out = append(out, laneEntry(name, a))
				kept++
			}
			if len(entries) < limit || kept >= limit {
				break
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Entry) int { return b.At.Compare(a.At) })
	return out[:min(len(out), limit)], nil
}

// laneEntry is an audit entry of a lane write as a history entry.
func laneEntry(event string, a store.AuditEntry) Entry {
	var d map[string]any
	_ = json.Unmarshal(a.Detail, &d)
	text := func(k string) string {
		if v, ok := d[k].(string); ok {
			return v
		}
		return ""
	}
	var parts []string
	if from := text("from"); from != "" {
		parts = append(parts, "from "+from)
	}
	switch {
	case text("reason") == "booking":
		parts = append(parts, fmt.Sprintf("booking of %s until %s", text("person"), text("end")))
	case a.ActorName != "":
		parts = append(parts, "by "+a.ActorName)
	case a.ActorKey != "":
		parts = append(parts, "by key "+a.ActorKey)
	}
	return Entry{At: a.At, Event: event, Lane: a.Target, Model: text("model"), Detail: strings.Join(parts, ", ")}
}
