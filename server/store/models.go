package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Model sources.
const (
	SourceLocal       = "local"
	SourceHuggingFace = "huggingface"
	SourceBundled     = "bundled"
	SourceAlias       = "alias"
)

// ModelRecord is one catalog row (see migrations/0003_models.sql).
type ModelRecord struct {
	ID   string
	Path string // absolute path of the GGUF file (the first part of a split model)
	// Source is SourceLocal, SourceHuggingFace, SourceBundled or SourceAlias.
	Source string
	// Repo, File and Revision locate a Hugging Face pull; SHA256 is the verified digest of File.
	Repo, File, Revision, SHA256 string
	// AliasOf is the model an alias (an /api/copy) was copied from.
	AliasOf        string
	Size           int64 // bytes on disk, all parts
	Architecture   string
	ParameterCount int64
	Quantization   string
	ContextLength  int
	Capabilities   []string
	AddedAt        time.Time
	LastUsedAt     time.Time // zero until first used
}

const modelColumns = `id, path, source, repo, file, revision, sha256, alias_of, size, architecture,
	parameter_count, quantization, context_length, capabilities, added_at, last_used_at`

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
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		m.ID, m.Path, m.Source, m.Repo, m.File, m.Revision, m.SHA256, m.AliasOf, m.Size, m.Architecture,
		m.ParameterCount, m.Quantization, m.ContextLength, string(caps), formatTime(added), optionalTime(m.LastUsedAt))
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
			&m.Size, &m.Architecture, &m.ParameterCount, &m.Quantization, &m.ContextLength, &caps, &added, &used); err != nil {
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
		return fmt.Errorf("delete model %s: %w", id, ErrNotFound)
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
