package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// SharedPrefix is one stored shared prefix (see migrations/0017_shared_prefixes.sql).
type SharedPrefix struct {
	ID   string // required and unique
	Name string // a label for lists ("" for none)
	// Model is the one model the prefix is for; "" is every model.
	Model string
	Text  string
	// CreatedBy names who registered it (a person's name, or "cli").
	CreatedBy string
	// CreatedAt is stored in UTC; zero means now.
	CreatedAt time.Time
}

// InsertSharedPrefix stores a new shared prefix.
func (s *Store) InsertSharedPrefix(ctx context.Context, p SharedPrefix) error {
	if p.ID == "" {
		return errors.New("save shared prefix: empty id")
	}
	if p.CreatedAt.IsZero() {
		p.CreatedAt = time.Now()
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO shared_prefixes (id, name, model, text, created_by, created_at)
		VALUES (?, ?, ?, ?, ?, ?)`, p.ID, p.Name, p.Model, p.Text, p.CreatedBy, formatTime(p.CreatedAt))
	if err != nil {
		return fmt.Errorf("save shared prefix %s: %w", p.ID, err)
	}
	return nil
}

// SharedPrefixes lists the stored shared prefixes, oldest first.
func (s *Store) SharedPrefixes(ctx context.Context) ([]SharedPrefix, error) {
	return queryRows(ctx, s, "list shared prefixes", scanSharedPrefix,
		`SELECT id, name, model, text, created_by, created_at FROM shared_prefixes ORDER BY created_at, id`)
}

// DeleteSharedPrefix removes the shared prefix id; ErrNotFound when there is none.
func (s *Store) DeleteSharedPrefix(ctx context.Context, id string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM shared_prefixes WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("remove shared prefix %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("remove shared prefix %s: %w", id, ErrNotFound)
	}
	return nil
}

func scanSharedPrefix(row interface{ Scan(...any) error }) (SharedPrefix, error) {
	var p SharedPrefix
	var created string
	if err := row.Scan(&p.ID, &p.Name, &p.Model, &p.Text, &p.CreatedBy, &created); err != nil {
		return p, err
	}
	var err error
	if p.CreatedAt, err = parseTime(created); err != nil {
		return p, fmt.Errorf("shared prefix %s: created_at: %w", p.ID, err)
	}
	return p, nil
}
