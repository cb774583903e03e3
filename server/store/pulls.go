package store

import (
	"context"
	"fmt"
	"time"
)

// PendingPull is a download the desktop app started and has not finished.
type PendingPull struct {
	Reference string
	Started   time.Time
}

// AddPendingPull records that the download of reference started (again: the first start is kept).
func (s *Store) AddPendingPull(ctx context.Context, reference string, started time.Time) error {
	if _, err := s.w.ExecContext(ctx, `INSERT OR IGNORE INTO pending_pulls (reference, started_at) VALUES (?, ?)`,
		reference, started.Unix()); err != nil {
		return fmt.Errorf("record the download of %s: %w", reference, err)
	}
	return nil
}

// RemovePendingPull forgets the download of reference (it ended); an unknown one is no error.
func (s *Store) RemovePendingPull(ctx context.Context, reference string) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM pending_pulls WHERE reference = ?`, reference); err != nil {
		return fmt.Errorf("forget the download of %s: %w", reference, err)
	}
	return nil
}

// PendingPulls lists the unfinished downloads, oldest first.
func (s *Store) PendingPulls(ctx context.Context) ([]PendingPull, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT reference, started_at FROM pending_pulls ORDER BY started_at, reference`)
	if err != nil {
		return nil, fmt.Errorf("list unfinished downloads: %w", err)
	}
	defer rows.Close()
	var out []PendingPull
	for rows.Next() {
		var p PendingPull
		var secs int64
		if err := rows.Scan(&p.Reference, &secs); err != nil {
			return nil, fmt.Errorf("list unfinished downloads: %w", err)
		}
		p.Started = time.Unix(secs, 0)
		out = append(out, p)
	}
	return out, rows.Err()
}
