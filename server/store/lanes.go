package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrLaneNameTaken is returned by InsertLane when a lane already has the name.
var ErrLaneNameTaken = errors.New("a lane already has this name")

// Lane is one stored lane (see migrations/0012_lanes.sql). The upstream key is write-only:
// InsertLane stores UpstreamKey, the reads leave it empty and set HasKey; only LaneUpstreamKey,
// for the engine that sends it, reads it back.
type Lane struct {
	ID     string // required and unique
	Name   string // required and unique
	Device string
	Engine string // local, openai or command (checked by package lanes, not here)
	Model  string
	Config LaneConfig
	// UpstreamKey is stored by InsertLane and never read back into a Lane.
	UpstreamKey string
	// HasKey reports whether an upstream key is stored.
	HasKey bool
	// CreatedAt and UpdatedAt are stored in UTC; zero means now.
	CreatedAt, UpdatedAt time.Time
}

// LaneConfig is what an engine needs besides its model.
type LaneConfig struct {
	// URL is an openai engine's base URL.
	URL string `json:"url,omitempty"`
	// Command is a command engine's command template ({model}, {port}).
	Command string `json:"command,omitempty"`
	// ServedModel is the name the engine serves the model by, when it is not the model's.
	ServedModel string `json:"served_model,omitempty"`
	// HeaderTimeout and IdleTimeout bound an openai or command engine's replies, in seconds:
	// the wait for a reply to start and each wait after (forward.Config); 0 is the default.
	HeaderTimeout int `json:"header_timeout,omitempty"`
	IdleTimeout   int `json:"idle_timeout,omitempty"`
}

const laneColumns = `id, name, device, engine, model, config, upstream_key != '', created_at, updated_at`

// InsertLane stores a new lane. It fails with an error wrapping ErrLaneNameTaken when a lane
// has the same name.
func (s *Store) InsertLane(ctx context.Context, l Lane) error {
	if l.ID == "" || l.Name == "" {
		return errors.New("save lane: empty id or name")
	}
	if l.CreatedAt.IsZero() {
		l.CreatedAt = time.Now()
	}
	if l.UpdatedAt.IsZero() {
		l.UpdatedAt = l.CreatedAt
	}
	config, err := json.Marshal(l.Config)
	if err != nil {
		return fmt.Errorf("save lane %s: %w", l.Name, err)
	}
	_, err = s.w.ExecContext(ctx, `INSERT INTO lanes (id, name, device, engine, model, config, upstream_key, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		l.ID, l.Name, l.Device, l.Engine, l.Model, string(config), l.UpstreamKey, formatTime(l.CreatedAt), formatTime(l.UpdatedAt))
	if err != nil {
		if strings.Contains(err.Error(), "UNIQUE constraint failed: lanes.name") {
			return fmt.Errorf("save lane %s: %w", l.Name, ErrLaneNameTaken)
		}
		return fmt.Errorf("save lane %s: %w", l.Name, err)
	}
	return nil
}

// Lanes lists the stored lanes, oldest first, without their upstream keys.
func (s *Store) Lanes(ctx context.Context) ([]Lane, error) {
	return queryRows(ctx, s, "list lanes", scanLane, `SELECT `+laneColumns+` FROM lanes ORDER BY created_at, id`)
}

// Lane is the lane whose id or name is nameOrID (the id wins), without its upstream key;
// ErrNotFound when there is none.
func (s *Store) Lane(ctx context.Context, nameOrID string) (Lane, error) {
	l, err := scanLane(s.r.QueryRowContext(ctx, `SELECT `+laneColumns+` FROM lanes WHERE id = ? OR name = ?
		ORDER BY id = ? DESC LIMIT 1`, nameOrID, nameOrID, nameOrID))
	if errors.Is(err, sql.ErrNoRows) {
		return Lane{}, fmt.Errorf("lane %s: %w", nameOrID, ErrNotFound)
	}
	if err != nil {
		return Lane{}, fmt.Errorf("lane %s: %w", nameOrID, err)
	}
	return l, nil
}

// LaneUpstreamKey is the upstream key stored for the lane id ("" when none): for the engine
// that sends it, never for a listing.
func (s *Store) LaneUpstreamKey(ctx context.Context, id string) (string, error) {
	var key string
	err := s.r.QueryRowContext(ctx, `SELECT upstream_key FROM lanes WHERE id = ?`, id).Scan(&key)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("lane %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("lane %s: %w", id, err)
	}
	return key, nil
}

// SetLaneModel records that the lane id serves model from now on; ErrNotFound when there is no
// such lane.
func (s *Store) SetLaneModel(ctx context.Context, id, model string, at time.Time) error {
	if at.IsZero() {
		at = time.Now()
	}
	res, err := s.w.ExecContext(ctx, `UPDATE lanes SET model = ?, updated_at = ? WHERE id = ?`, model, formatTime(at), id)
	if err != nil {
		return fmt.Errorf("switch lane %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("switch lane %s: %w", id, ErrNotFound)
	}
	return nil
}

// DeleteLane removes the lane id; ErrNotFound when there is no such lane.
func (s *Store) DeleteLane(ctx context.Context, id string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM lanes WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("remove lane %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("remove lane %s: %w", id, ErrNotFound)
	}
	return nil
}

func scanLane(row interface{ Scan(...any) error }) (Lane, error) {
	var l Lane
	var config, created, updated string
	var hasKey int
	if err := row.Scan(&l.ID, &l.Name, &l.Device, &l.Engine, &l.Model, &config, &hasKey, &created, &updated); err != nil {
		return l, err
	}
	l.HasKey = hasKey == 1
	if err := json.Unmarshal([]byte(config), &l.Config); err != nil {
		return l, fmt.Errorf("lane %s: config: %w", l.ID, err)
	}
	var err error
	if l.CreatedAt, err = parseTime(created); err != nil {
		return l, fmt.Errorf("lane %s: created_at: %w", l.ID, err)
	}
	if l.UpdatedAt, err = parseTime(updated); err != nil {
		return l, fmt.Errorf("lane %s: updated_at: %w", l.ID, err)
	}
	return l, nil
}
