package lanes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/superfluid/superfluid/server/store"
)

// Config is what a Manager needs.
type Config struct {
	Store *store.Store
	// Devices are the machine's (Devices); a lane must name one.
	Devices []Device
	// Catalog holds the models a local lane may serve; nil accepts any name.
	Catalog Catalog
	// Factory builds lanes' engines. nil manages the rows only (the CLI, with no server
	// running): nothing is started or drained.
	Factory EngineFactory
	// Audit records every lane written through Add, Switch and Remove (the admin API, the
	// CLI), by whoever ctx says; nil records nothing. A booking's switches are audited by the
	// booking's follower (FollowBookings) instead.
	Audit AuditFunc
}

// AuditFunc records one lane write: action one of the Action constants, lane the lane's name,
// detail what changed (never an upstream key). The write is done already, so an error is
// logged, not returned.
type AuditFunc func(ctx context.Context, action, lane string, detail map[string]any) error

// Audited lane writes.
const (
	ActionAdd    = "lane.create"
	ActionSwitch = "lane.switch"
	ActionRemove = "lane.remove"
)

// Manager keeps the lanes: their rows in the store and, with a Factory, their engines.
type Manager struct {
	cfg   Config
	mu    sync.Mutex
	lanes []*Lane // in creation order
	// switches orders Switch's store write with its start of the switch, so of two at once
	// (a booking's and an admin's) the lane serves the one its row keeps.
	switches sync.Mutex
}

// NewLane is a lane to add.
type NewLane struct {
	Name, Device string
	Engine       Kind
	Model        string
	Config       store.LaneConfig
	// UpstreamKey is sent to an openai engine; stored write-only.
	UpstreamKey string
}

// NewManager is a manager over cfg; Start loads the stored lanes.
func NewManager(cfg Config) *Manager { return &Manager{cfg: cfg} }

// Start loads the stored lanes and starts each one's engine.
func (m *Manager) Start(ctx context.Context) error {
	rows, err := m.cfg.Store.Lanes(ctx)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, row := range rows {
		l := newLane(row)
		m.lanes = append(m.lanes, l)
		m.switchLane(l, "")
	}
	return nil
}

// Lanes are the running lanes, in creation order.
func (m *Manager) Lanes() []*Lane {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*Lane(nil), m.lanes...)
}

// List is the stored lanes with their states (a Manager without a Factory reports each as
// its row, unavailable).
func (m *Manager) List(ctx context.Context) ([]Status, error) {
	if m.cfg.Factory == nil {
		rows, err := m.cfg.Store.Lanes(ctx)
		out := make([]Status, 0, len(rows))
		for _, r := range rows {
			out = append(out, Status{Lane: r, State: Unavailable})
		}
		return out, err
	}
	var out []Status
	for _, l := range m.Lanes() {
		out = append(out, l.Status())
	}
	return out, nil
}

// Add stores a new lane and starts its engine. A duplicate name, an unknown device, engine
// kind or (local) model, or an engine without what it needs is refused.
func (m *Manager) Add(ctx context.Context, n NewLane) (Status, error) {
	kind, err := ParseKind(string(n.Engine))
	if err != nil {
		return Status{}, err
	}
	if n.Name = strings.TrimSpace(n.Name); n.Name == "" || strings.ContainsAny(n.Name, "/ \t\n") {
		return Status{}, fmt.Errorf("%w: a lane needs a name without spaces or slashes", ErrInvalidLane)
	}
	device, err := checkDevice(m.cfg.Devices, kind, n.Device)
	if err != nil {
		return Status{}, err
	}
	if n.Model, err = m.checkModel(kind, n.Model); err != nil {
		return Status{}, err
	}
	switch {
	case kind == OpenAI && n.Config.URL == "":
		return Status{}, fmt.Errorf("%w: an openai lane needs --url, the server's base URL", ErrInvalidLane)
	case kind == Command && n.Config.Command == "":
		return Status{}, fmt.Errorf("%w: a command lane needs --command, the server's command line", ErrInvalidLane)
	case kind != OpenAI && n.UpstreamKey != "":
		return Status{}, fmt.Errorf("%w: only an openai lane sends an upstream key", ErrInvalidLane)
	case n.Config.HeaderTimeout < 0 || n.Config.IdleTimeout < 0:
		return Status{}, fmt.Errorf("%w: a timeout is a number of seconds, 0 for the default", ErrInvalidLane)
	case kind == Local && (n.Config.HeaderTimeout > 0 || n.Config.IdleTimeout > 0):
		return Status{}, fmt.Errorf("%w: only an openai or command lane forwards, with timeouts", ErrInvalidLane)
	}
	now := time.Now().UTC()
	row := store.Lane{ID: newID(), Name: n.Name, Device: device, Engine: string(kind), Model: n.Model, Config: n.Config,
		UpstreamKey: n.UpstreamKey, CreatedAt: now, UpdatedAt: now}
	if err := m.cfg.Store.InsertLane(ctx, row); err != nil {
		if errors.Is(err, store.ErrLaneNameTaken) {
			return Status{}, fmt.Errorf("%w: %s", ErrLaneExists, n.Name)
		}
		return Status{}, err
	}
	row.HasKey, row.UpstreamKey = row.UpstreamKey != "", ""
	m.audit(ctx, ActionAdd, row.Name, map[string]any{"id": row.ID, "device": row.Device, "engine": row.Engine, "model": row.Model,
		"url": redactURL(row.Config.URL), "command": row.Config.Command, "served_model": row.Config.ServedModel, "has_key": row.HasKey})
	l := newLane(row)
	if m.cfg.Factory == nil {
		return Status{Lane: row, State: Unavailable}, nil
	}
	m.mu.Lock()
	m.lanes = append(m.lanes, l)
	m.switchLane(l, "")
	m.mu.Unlock()
	return l.Status(), nil
}

// Switch points the lane named (or with id) nameOrID at model: running requests finish, new
// ones get model_switching until the old model is released, then model_unavailable until the
// new one serves. It returns once the switch has begun (Lane.Settled tells when it is over).
func (m *Manager) Switch(ctx context.Context, nameOrID, model string) (Status, error) {
	return m.switchModel(ctx, nameOrID, model, true)
}

// switchModel is Switch, audited when audit is set.
func (m *Manager) switchModel(ctx context.Context, nameOrID, model string, audit bool) (Status, error) {
	row, err := m.cfg.Store.Lane(ctx, nameOrID)
	if errors.Is(err, store.ErrNotFound) {
		return Status{}, fmt.Errorf("%w: %s", ErrLaneNotFound, nameOrID)
	}
	if err != nil {
		return Status{}, err
	}
	if model, err = m.checkModel(Kind(row.Engine), model); err != nil {
		return Status{}, err
	}
	m.switches.Lock()
	defer m.switches.Unlock()
	if err := m.cfg.Store.SetLaneModel(ctx, row.ID, model, time.Now()); err != nil {
		return Status{}, err
	}
	if audit {
		m.audit(ctx, ActionSwitch, row.Name, map[string]any{"id": row.ID, "from": row.Model, "model": model})
	}
	l := m.lane(row.ID)
	if l == nil {
		row.Model = model
		return Status{Lane: row, State: Unavailable}, nil
	}
	m.mu.Lock()
	m.switchLane(l, model)
	m.mu.Unlock()
	return l.Status(), nil
}

// Remove drains the lane (running requests finish; new ones get model_switching), releases
// its engine and deletes it. It waits for the drain until ctx ends.
func (m *Manager) Remove(ctx context.Context, nameOrID string) error {
	row, err := m.cfg.Store.Lane(ctx, nameOrID)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %s", ErrLaneNotFound, nameOrID)
	}
	if err != nil {
		return err
	}
	m.audit(ctx, ActionRemove, row.Name, map[string]any{"id": row.ID, "device": row.Device, "engine": row.Engine, "model": row.Model})
	l := m.lane(row.ID)
	if l == nil {
		return m.cfg.Store.DeleteLane(ctx, row.ID)
	}
	epoch, sctx, old, prev, done := l.end()
	go l.run(epoch, sctx, old, prev, done, nil, nil)
	finish := func() error {
		m.mu.Lock()
		for i, x := range m.lanes {
			if x == l {
				m.lanes = append(m.lanes[:i], m.lanes[i+1:]...)
				break
			}
		}
		m.mu.Unlock()
		err := m.cfg.Store.DeleteLane(context.Background(), row.ID)
		if errors.Is(err, store.ErrNotFound) {
			return nil // a removal that raced this one deleted it
		}
		return err
	}
	select {
	case <-done:
		return finish()
	case <-ctx.Done():
		// The lane serves nothing more (end): its removal completes once its requests finish.
		go func() { <-done; _ = finish() }()
		return fmt.Errorf("remove lane %s: still waiting for its requests (it is removed once they finish): %w", row.Name, ctx.Err())
	}
}

// Close drains every lane and releases its engine, until ctx ends. Every lane is ended first,
// so one lane's long drain does not leave the others' engines running past ctx.
func (m *Manager) Close(ctx context.Context) error {
	var ended []chan struct{}
	for _, l := range m.Lanes() {
		epoch, sctx, old, prev, done := l.end()
		go l.run(epoch, sctx, old, prev, done, nil, nil)
		ended = append(ended, done)
	}
	for _, done := range ended {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// audit records one write through the Config's Audit.
func (m *Manager) audit(ctx context.Context, action, lane string, detail map[string]any) {
	if m.cfg.Audit == nil {
		return
	}
	if err := m.cfg.Audit(ctx, action, lane, detail); err != nil {
		slog.Error("audit a lane write", "action", action, "lane", lane, "err", err)
	}
}

// redactURL is u with any password in it masked, for the audit log ("" stays "").
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.User == nil {
		return u
	}
	return p.Redacted()
}

// switchLane begins l's switch to model ("" for its row's) and runs it in the background.
func (m *Manager) switchLane(l *Lane, model string) {
	epoch, ctx, old, prev, done := l.begin(model)
	go l.run(epoch, ctx, old, prev, done, m.cfg.Factory, m.spec)
}

// spec is the factory's view of row, with its upstream key.
func (m *Manager) spec(row store.Lane) Spec {
	key, _ := m.cfg.Store.LaneUpstreamKey(context.Background(), row.ID)
	return Spec{Lane: row, UpstreamKey: key}
}

func (m *Manager) lane(id string) *Lane {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, l := range m.lanes {
		if l.row.ID == id {
			return l
		}
	}
	return nil
}

// checkModel is model as a lane of kind k serves it (CheckModel over the manager's catalog).
func (m *Manager) checkModel(k Kind, model string) (string, error) {
	return CheckModel(m.cfg.Catalog, k, model)
}

// CheckModel is model as a lane of kind k serves it (a local one by its catalog id, so the
// router matches the name clients see), or the refusal (ErrUnknownModel): no model, or (local)
// one catalog does not have, or (command) one beginning with "-", which the command line would
// take as an option. An openai or command lane's model is otherwise whatever its server
// serves, which superfluid keeps no list of, so any name is taken. A nil catalog takes any.
func CheckModel(catalog Catalog, k Kind, model string) (string, error) {
	if strings.TrimSpace(model) == "" || strings.ContainsAny(model, "\x00\n\r") {
		return "", fmt.Errorf("%w: a lane needs a model", ErrUnknownModel)
	}
	if k == Command && strings.HasPrefix(model, "-") { // a word of the command line: no option
		return "", fmt.Errorf("%w %q: a command lane's model may not begin with \"-\"", ErrUnknownModel, model)
	}
	if k == Local && catalog != nil {
		cm, err := catalog.Model(model)
		if err != nil {
			return "", fmt.Errorf("%w %q: %v", ErrUnknownModel, model, err)
		}
		model = cm.ID
	}
	return model, nil
}

func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "lane-" + hex.EncodeToString(b)
}
