package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrPersonNameTaken is returned by InsertPerson when a person already has the name (names are
// compared without regard to case).
var ErrPersonNameTaken = errors.New("a person already has this name")

// Person is one row of the people table (see migrations/0011_people.sql). The store keeps
// what it is given; package people checks names, roles, states and hashes.
type Person struct {
	ID   string
	Name string
	// PasswordHash is the argon2id PHC string.
	PasswordHash string
	Role, State  string
	// CreatedAt and UpdatedAt are stored in UTC; zero means now.
	CreatedAt, UpdatedAt time.Time
}

const personColumns = `id, name, password_hash, role, state, created_at, updated_at`

// InsertPerson stores a new person. It fails with an error wrapping ErrPersonNameTaken when
// the name is taken.
func (s *Store) InsertPerson(ctx context.Context, p Person) error {
	if p.ID == "" || p.Name == "" {
		return errors.New("save person: empty id or name")
	}
	now := time.Now()
	if p.CreatedAt.IsZero() {
		p.CreatedAt = now
	}
	if p.UpdatedAt.IsZero() {
		p.UpdatedAt = p.CreatedAt
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO people (`+personColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		p.ID, p.Name, p.PasswordHash, p.Role, p.State, formatTime(p.CreatedAt), formatTime(p.UpdatedAt))
	if err != nil {
		if strings.Contains(err.Error(), "UNIQUE constraint failed: people.name") {
			return fmt.Errorf("save person %s: %w", p.Name, ErrPersonNameTaken)
		}
		return fmt.Errorf("save person %s: %w", p.Name, err)
	}
	return nil
}

// UpdatePerson writes a person's password hash, role, state and updated time (the name and id
// never change). A person that does not exist is ErrNotFound.
func (s *Store) UpdatePerson(ctx context.Context, p Person) error {
	if p.UpdatedAt.IsZero() {
		p.UpdatedAt = time.Now()
	}
	res, err := s.w.ExecContext(ctx, `UPDATE people SET password_hash = ?, role = ?, state = ?, updated_at = ? WHERE id = ?`,
		p.PasswordHash, p.Role, p.State, formatTime(p.UpdatedAt), p.ID)
	if err != nil {
		return fmt.Errorf("update person %s: %w", p.Name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("update person %s: %w", p.ID, ErrNotFound)
	}
	return nil
}

// PersonByNameOrID returns the person whose id is nameOrID or, failing that, whose name is
// (without regard to case); ErrNotFound when none is.
func (s *Store) PersonByNameOrID(ctx context.Context, nameOrID string) (Person, error) {
	p, err := scanPerson(s.r.QueryRowContext(ctx, `SELECT `+personColumns+` FROM people WHERE id = ? OR name = ?
		ORDER BY id = ? DESC LIMIT 1`, nameOrID, nameOrID, nameOrID))
	if errors.Is(err, sql.ErrNoRows) {
		return Person{}, fmt.Errorf("person %s: %w", nameOrID, ErrNotFound)
	}
	if err != nil {
		return Person{}, fmt.Errorf("person %s: %w", nameOrID, err)
	}
	return p, nil
}

// People lists every person, oldest first.
func (s *Store) People(ctx context.Context) ([]Person, error) {
	return queryRows(ctx, s, "list people", scanPerson, `SELECT `+personColumns+` FROM people ORDER BY created_at, id`)
}

func scanPerson(row interface{ Scan(...any) error }) (Person, error) {
	var p Person
	var created, updated string
	if err := row.Scan(&p.ID, &p.Name, &p.PasswordHash, &p.Role, &p.State, &created, &updated); err != nil {
		return p, err
	}
	var err error
	if p.CreatedAt, err = parseTime(created); err != nil {
		return p, fmt.Errorf("person %s: created_at: %w", p.ID, err)
	}
	if p.UpdatedAt, err = parseTime(updated); err != nil {
		return p, fmt.Errorf("person %s: updated_at: %w", p.ID, err)
	}
	return p, nil
}
