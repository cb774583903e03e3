package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Quota owners (token_quotas.owner_kind).
const (
	QuotaPerson = "person"
	QuotaKey    = "key"
)

// TokenQuota is one row of token_quotas (migrations/0015_token_quotas.sql): the tokens a
// person or a key may spend a UTC day and a UTC month. A nil field is not set (a person
// falls back to the server's default, a key has none); 0 is unlimited.
type TokenQuota struct {
	Kind, OwnerID string
	Daily         *int64
	Monthly       *int64
	UpdatedAt     time.Time
}

// TokenQuotaOf returns the quota row of kind's owner id; a zero TokenQuota (both fields nil)
// when none is stored.
func (s *Store) TokenQuotaOf(ctx context.Context, kind, id string) (TokenQuota, error) {
	q := TokenQuota{Kind: kind, OwnerID: id}
	var daily, monthly sql.NullInt64
	var updated string
	err := s.r.QueryRowContext(ctx, `SELECT daily_tokens, monthly_tokens, updated_at FROM token_quotas
		WHERE owner_kind = ? AND owner_id = ?`, kind, id).Scan(&daily, &monthly, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return q, nil
	}
	if err != nil {
		return q, fmt.Errorf("quota of %s %s: %w", kind, id, err)
	}
	q.Daily, q.Monthly = int64Ptr(daily), int64Ptr(monthly)
	if q.UpdatedAt, err = parseTime(updated); err != nil {
		return q, fmt.Errorf("quota of %s %s: updated_at %q: %w", kind, id, updated, err)
	}
	return q, nil
}

// PutTokenQuota stores q (replacing the owner's row); a q with both fields nil deletes the
// row. Negative fields are refused by the table.
func (s *Store) PutTokenQuota(ctx context.Context, q TokenQuota) error {
	if q.Kind == "" || q.OwnerID == "" {
		return errors.New("save quota: empty owner")
	}
	var err error
	if q.Daily == nil && q.Monthly == nil {
		_, err = s.w.ExecContext(ctx, `DELETE FROM token_quotas WHERE owner_kind = ? AND owner_id = ?`, q.Kind, q.OwnerID)
	} else {
		if q.UpdatedAt.IsZero() {
			q.UpdatedAt = time.Now()
		}
		_, err = s.w.ExecContext(ctx, `INSERT OR REPLACE INTO token_quotas (owner_kind, owner_id, daily_tokens, monthly_tokens, updated_at)
			VALUES (?, ?, ?, ?, ?)`, q.Kind, q.OwnerID, nullInt64(q.Daily), nullInt64(q.Monthly), formatTime(q.UpdatedAt))
	}
	if err != nil {
		return fmt.Errorf("save quota of %s %s: %w", q.Kind, q.OwnerID, err)
	}
	return nil
}

// TokenSpend is what an owner's request records add up to since two instants.
type TokenSpend struct {
	// Uncached counts prompt tokens not served from the prefix cache plus completion tokens;
	// Cached the prompt tokens that were.
	Uncached, Cached int64
}

// SpentTokens sums the request records of kind's owner id created at or after day and at or
// after month (day is the later instant: the start of the UTC day, month of the UTC month).
// The sums read the index alone (requests_person_tokens, requests_key_tokens).
func (s *Store) SpentTokens(ctx context.Context, kind, id string, day, month time.Time) (daily, monthly TokenSpend, err error) {
	column := "person_id"
	if kind == QuotaKey {
		column = "key_id"
	}
	d := formatTime(day)
	err = s.r.QueryRowContext(ctx, `SELECT
		coalesce(sum(CASE WHEN created_at >= ? THEN max(prompt_tokens - cached_tokens, 0) + completion_tokens END), 0),
		coalesce(sum(CASE WHEN created_at >= ? THEN cached_tokens END), 0),
		coalesce(sum(max(prompt_tokens - cached_tokens, 0) + completion_tokens), 0),
		coalesce(sum(cached_tokens), 0)
		FROM requests WHERE `+column+` = ? AND created_at >= ?`, d, d, id, formatTime(month)).
		Scan(&daily.Uncached, &daily.Cached, &monthly.Uncached, &monthly.Cached)
	if err != nil {
		return daily, monthly, fmt.Errorf("tokens spent by %s %s: %w", kind, id, err)
	}
	return daily, monthly, nil
}

func int64Ptr(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	return &n.Int64
}

func nullInt64(n *int64) sql.NullInt64 {
	if n == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: *n, Valid: true}
}
