package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/superfluid/superfluid/runtime/models"
)

// The models table holds the catalog's records: *Store is the catalog's models.RecordStore,
// and the record type and sources are the catalog's own.

// Model sources.
const (
	SourceLocal       = models.SourceLocal
	SourceHuggingFace = models.SourceHuggingFace
	SourceBundled     = models.SourceBundled
	SourceAlias       = models.SourceAlias
)

// ModelRecord is one catalog row (see migrations/0003_models.sql and 0022_model_kinds.sql).
type ModelRecord = models.Record

var _ models.RecordStore = (*Store)(nil)

// errNoModel is DeleteModel's not-found: ErrNotFound here, models.ErrNoRecord to the catalog.
type errNoModel struct{}

func (errNoModel) Error() string        { return ErrNotFound.Error() }
func (errNoModel) Is(target error) bool { return target == ErrNotFound || target == models.ErrNoRecord }

const modelColumns = `id, path, source, repo, file, revision, sha256, alias_of, size, architecture,
	parameter_count, quantization, context_length, capabilities, added_at, last_used_at, projector, kind,
	base_model`

// PutModel inserts m, or replaces the row with the same id.
func (s *Store) PutModel(ctx context.Context, m ModelRecord) error {
	if m.ID == "" || m.Path == "" {
		return errors.New("save model: empty id or path")
	}
	caps, err := json.Marshal(nonNil(m.Capabilities))
	if err != nil {
		return fmt.Errorf("save model %s: %w", m.ID, err)
	}
	added := m.AddedAt
	if added.IsZero() {
		added = time.Now()
	}
	_, err = s.w.ExecContext(ctx, `INSERT OR REPLACE INTO models (`+modelColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		m.ID, m.Path, m.Source, m.Repo, m.File, m.Revision, m.SHA256, m.AliasOf, m.Size, m.Architecture,
		m.ParameterCount, m.Quantization, m.ContextLength, string(caps), formatTime(added), optionalTime(m.LastUsedAt),
		m.Projector, m.Kind, m.BaseModel)
	if err != nil {
		return fmt.Errorf("save model %s: %w", m.ID, err)
	}
	return nil
}

// Models lists the catalog, oldest first.
func (s *Store) Models(ctx context.Context) ([]ModelRecord, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+modelColumns+` FROM models ORDER BY added_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list models: %w", err)
	}
	defer rows.Close()
	out := []ModelRecord{}
	for rows.Next() {
		var m ModelRecord
		var caps, added, used string
		if err := rows.Scan(&m.ID, &m.Path, &m.Source, &m.Repo, &m.File, &m.Revision, &m.SHA256, &m.AliasOf,
			&m.Size, &m.Architecture, &m.ParameterCount, &m.Quantization, &m.ContextLength, &caps, &added, &used,
			&m.Projector, &m.Kind, &m.BaseModel); err != nil {
			return nil, fmt.Errorf("list models: %w", err)
		}
		if err := json.Unmarshal([]byte(caps), &m.Capabilities); err != nil {
			return nil, fmt.Errorf("list models: %s capabilities: %w", m.ID, err)
		}
		if m.AddedAt, err = parseTime(added); err != nil {
			return nil, fmt.Errorf("list models: %s added_at: %w", m.ID, err)
		}
		if used != "" {
			if m.LastUsedAt, err = parseTime(used); err != nil {
				return nil, fmt.Errorf("list models: %s last_used_at: %w", m.ID, err)
			}
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list models: %w", err)
	}
	return out, nil
}

// DeleteModel removes the row with the given id; a missing id is an error wrapping ErrNotFound.
func (s *Store) DeleteModel(ctx context.Context, id string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM models WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("delete model %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("delete model %s: %w", id, errNoModel{})
	}
	return nil
}

// TouchModel sets a model's last-used time.
func (s *Store) TouchModel(ctx context.Context, id string, t time.Time) error {
	if _, err := s.w.ExecContext(ctx, `UPDATE models SET last_used_at = ? WHERE id = ?`, formatTime(t), id); err != nil {
		return fmt.Errorf("touch model %s: %w", id, err)
	}
	return nil
}

func optionalTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return formatTime(t)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
