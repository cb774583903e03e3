package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ModelSettings are one model's settings; zero values (and nil pointers) mean the server's
// default.
type ModelSettings struct {
	ModelID       string
	ContextLength int
	Lanes         int
	KeepAlive     *time.Duration // 0 unloads after each request; negative never unloads
	Runtime       string
	Temperature   *float64
	TopP          *float64
	TopK          *int
	MinP          *float64
	MaxTokens     int
	SystemPrompt  string
	// Speculative is the model's speculative decoding mode (off, ngram, draft; "" for the
	// server's --speculative); DraftModel the draft model (a catalog id or a .gguf path);
	// DraftTokens the most tokens drafted per step (0: the engine's default).
	Speculative string
	DraftModel  string
	DraftTokens int
	// FlashAttention is on, off or auto ("" is auto).
	FlashAttention string
}

// PutModelSettings stores s, replacing what the model had.
func (s *Store) PutModelSettings(ctx context.Context, m ModelSettings) error {
	var keep sql.NullInt64
	if m.KeepAlive != nil {
		keep = sql.NullInt64{Int64: m.KeepAlive.Milliseconds(), Valid: true}
		if *m.KeepAlive < 0 {
			keep.Int64 = -1
		}
	}
	_, err := s.w.ExecContext(ctx, `INSERT OR REPLACE INTO model_settings (model_id, context_length, lanes, keep_alive_ms,
		runtime, temperature, top_p, top_k, min_p, max_tokens, system_prompt, speculative, draft_model, draft_tokens,
		flash_attention) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		m.ModelID, m.ContextLength, m.Lanes, keep, m.Runtime, nullFloat(m.Temperature), nullFloat(m.TopP),
		nullInt(m.TopK), nullFloat(m.MinP), m.MaxTokens, m.SystemPrompt, m.Speculative, m.DraftModel, m.DraftTokens,
		m.FlashAttention)
	if err != nil {
		return fmt.Errorf("save settings of %s: %w", m.ModelID, err)
	}
	return nil
}

// ModelSettingsOf returns the model's settings; a model with none gets the zero settings.
func (s *Store) ModelSettingsOf(ctx context.Context, id string) (ModelSettings, error) {
	m := ModelSettings{ModelID: id}
	var keep sql.NullInt64
	var temp, topP, minP sql.NullFloat64
	var topK sql.NullInt64
	err := s.r.QueryRowContext(ctx, `SELECT context_length, lanes, keep_alive_ms, runtime, temperature, top_p, top_k,
		min_p, max_tokens, system_prompt, speculative, draft_model, draft_tokens, flash_attention FROM model_settings
		WHERE model_id = ?`, id).Scan(&m.ContextLength, &m.Lanes, &keep, &m.Runtime, &temp, &topP, &topK, &minP,
		&m.MaxTokens, &m.SystemPrompt, &m.Speculative, &m.DraftModel, &m.DraftTokens, &m.FlashAttention)
	if errors.Is(err, sql.ErrNoRows) {
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("settings of %s: %w", id, err)
	}
	if keep.Valid {
		d := time.Duration(keep.Int64) * time.Millisecond
		m.KeepAlive = &d
	}
	m.Temperature, m.TopP, m.MinP = floatPtr(temp), floatPtr(topP), floatPtr(minP)
	if topK.Valid {
		k := int(topK.Int64)
		m.TopK = &k
	}
	return m, nil
}

// DeleteModelSettings forgets a model's settings (when the model is removed).
func (s *Store) DeleteModelSettings(ctx context.Context, id string) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM model_settings WHERE model_id = ?`, id); err != nil {
		return fmt.Errorf("delete settings of %s: %w", id, err)
	}
	return nil
}

func nullFloat(f *float64) sql.NullFloat64 {
	if f == nil {
		return sql.NullFloat64{}
	}
	return sql.NullFloat64{Float64: *f, Valid: true}
}

func nullInt(n *int) sql.NullInt64 {
	if n == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: int64(*n), Valid: true}
}

func floatPtr(f sql.NullFloat64) *float64 {
	if !f.Valid {
		return nil
	}
	return &f.Float64
}

// AppSetting returns the desktop app's setting key, or "" when it was never set.
func (s *Store) AppSetting(ctx context.Context, key string) (string, error) {
	var v string
	err := s.r.QueryRowContext(ctx, `SELECT value FROM app_settings WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("setting %s: %w", key, err)
	}
	return v, nil
}

// SetAppSetting stores the desktop app's setting key.
func (s *Store) SetAppSetting(ctx context.Context, key, value string) error {
	if _, err := s.w.ExecContext(ctx, `INSERT OR REPLACE INTO app_settings (key, value) VALUES (?, ?)`, key, value); err != nil {
		return fmt.Errorf("save setting %s: %w", key, err)
	}
	return nil
}
