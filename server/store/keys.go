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

// ErrKeyNameTaken is returned by InsertKey when an active key already has the name.
var ErrKeyNameTaken = errors.New("an active key already has this name")

// Key is one stored API key (see migrations/0009_api_keys.sql): its hash, never the key.
type Key struct {
	ID     string // "key-" and hex digits; required and unique
	Name   string
	Prefix string   // the key's first characters, for lists
	Hash   [32]byte // SHA-256 of the key
	Admin  bool
	// Models are the model ids the key may use; empty for every model.
	Models []string
	// Origins are the browser origins the key may be used from; empty for any the server allows.
	Origins []string
	// QoS is the highest scheduling class the key may ask for; "" for any.
	QoS                   string
	RPM, TPM, Concurrency int
	// CreatedAt is stored in UTC with nanosecond precision; zero means now.
	CreatedAt time.Time
	// RevokedAt is when the key was revoked; zero while it is active.
	RevokedAt time.Time
	// PersonID is the person the key belongs to (team mode); "" for a key of nobody.
	PersonID string
}

// Active reports whether the key has not been revoked.
func (k Key) Active() bool { return k.RevokedAt.IsZero() }

const keyColumns = `id, name, prefix, hash, admin, models, origins, qos, rpm, tpm, concurrency, created_at, revoked_at, person_id`

// InsertKey stores a new key. It fails with an error wrapping ErrKeyNameTaken when an active
// key has the same name.
func (s *Store) InsertKey(ctx context.Context, k Key) error {
	if k.ID == "" || k.Name == "" {
		return errors.New("save key: empty id or name")
	}
	if k.CreatedAt.IsZero() {
		k.CreatedAt = time.Now()
	}
	models, _ := json.Marshal(nonNil(k.Models))
	origins, _ := json.Marshal(nonNil(k.Origins))
	_, err := s.w.ExecContext(ctx, `INSERT INTO api_keys (`+keyColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		k.ID, k.Name, k.Prefix, k.Hash[:], boolInt(k.Admin), string(models), string(origins), k.QoS,
		k.RPM, k.TPM, k.Concurrency, formatTime(k.CreatedAt), optionalTime(k.RevokedAt), nullString(k.PersonID))
	if err != nil {
		if strings.Contains(err.Error(), "UNIQUE constraint failed: api_keys.name") {
			return fmt.Errorf("save key %s: %w", k.Name, ErrKeyNameTaken)
		}
		return fmt.Errorf("save key %s: %w", k.Name, err)
	}
	return nil
}

// Keys lists the stored keys, oldest first; revoked ones only when withRevoked is set.
func (s *Store) Keys(ctx context.Context, withRevoked bool) ([]Key, error) {
	q := `SELECT ` + keyColumns + ` FROM api_keys`
	if !withRevoked {
		q += ` WHERE revoked_at = ''`
	}
	return queryRows(ctx, s, "list keys", scanKey, q+` ORDER BY created_at, id`)
}

// RevokeKey revokes the active key whose id or name is nameOrID and returns it as revoked. A
// key that does not exist or is already revoked is ErrNotFound.
func (s *Store) RevokeKey(ctx context.Context, nameOrID string, at time.Time) (Key, error) {
	if at.IsZero() {
		at = time.Now()
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return Key{}, fmt.Errorf("revoke key %s: %w", nameOrID, err)
	}
	defer tx.Rollback()
	k, err := scanKey(tx.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE revoked_at = '' AND (id = ? OR name = ?)
		ORDER BY id = ? DESC LIMIT 1`, nameOrID, nameOrID, nameOrID))
	if errors.Is(err, sql.ErrNoRows) {
		return Key{}, fmt.Errorf("revoke key %s: %w", nameOrID, ErrNotFound)
	}
	if err != nil {
		return Key{}, fmt.Errorf("revoke key %s: %w", nameOrID, err)
	}
	k.RevokedAt = at.UTC()
	if _, err := tx.ExecContext(ctx, `UPDATE api_keys SET revoked_at = ? WHERE id = ?`, formatTime(at), k.ID); err != nil {
		return Key{}, fmt.Errorf("revoke key %s: %w", nameOrID, err)
	}
	if err := tx.Commit(); err != nil {
		return Key{}, fmt.Errorf("revoke key %s: %w", nameOrID, err)
	}
	return k, nil
}

func scanKey(row interface{ Scan(...any) error }) (Key, error) {
	var k Key
	var hash []byte
	var admin int
	var models, origins, created, revoked string
	var person sql.NullString
	if err := row.Scan(&k.ID, &k.Name, &k.Prefix, &hash, &admin, &models, &origins, &k.QoS, &k.RPM, &k.TPM,
		&k.Concurrency, &created, &revoked, &person); err != nil {
		return k, err
	}
	k.PersonID = person.String
	copy(k.Hash[:], hash)
	k.Admin = admin == 1
	if err := json.Unmarshal([]byte(models), &k.Models); err != nil {
		return k, fmt.Errorf("key %s: models: %w", k.ID, err)
	}
	if err := json.Unmarshal([]byte(origins), &k.Origins); err != nil {
		return k, fmt.Errorf("key %s: origins: %w", k.ID, err)
	}
	var err error
	if k.CreatedAt, err = parseTime(created); err != nil {
		return k, fmt.Errorf("key %s: created_at: %w", k.ID, err)
	}
	if k.RevokedAt, err = parseOptionalTime(revoked); err != nil {
		return k, fmt.Errorf("key %s: revoked_at: %w", k.ID, err)
	}
	if len(k.Models) == 0 {
		k.Models = nil
	}
	if len(k.Origins) == 0 {
		k.Origins = nil
	}
	return k, nil
}

// nullString stores "" as NULL (a key of nobody has no person).
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
