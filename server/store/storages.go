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

// ErrStorageNameTaken is returned by InsertStorage and UpdateStorage when another storage
// already has the name.
var ErrStorageNameTaken = errors.New("a storage already has this name")

// Storage is one stored storage (see migrations/0019_storages.sql). The secret is write-only:
// InsertStorage and UpdateStorage store Secret, the reads leave it empty and set HasSecret; only
// StorageSecret, for the client that sends it, reads it back.
type Storage struct {
	ID   string // required and unique
	Name string // required and unique
	Kind string // local, s3, smb or nfs (checked by package storage, not here)
	// Path is the folder of a local, smb or nfs storage.
	Path string
	// Endpoint, Bucket, Region, Prefix and AccessKey locate an s3 storage.
	Endpoint, Bucket, Region, Prefix, AccessKey string
	// Secret is stored by InsertStorage and UpdateStorage and never read back into a Storage.
	Secret string
	// HasSecret reports whether a secret is stored.
	HasSecret bool
	// Shared: every person may use it. People are the ids of the persons who may besides.
	Shared bool
	People []string
	// CreatedAt and UpdatedAt are stored in UTC; zero means now.
	CreatedAt, UpdatedAt time.Time
}

const storageColumns = `id, name, kind, path, endpoint, bucket, region, prefix, access_key, secret != '',
	shared, people, created_at, updated_at`

// InsertStorage stores a new storage; an error wrapping ErrStorageNameTaken when the name is
// another's.
func (s *Store) InsertStorage(ctx context.Context, st Storage) error {
	if st.ID == "" || st.Name == "" {
		return errors.New("save storage: empty id or name")
	}
	if st.CreatedAt.IsZero() {
		st.CreatedAt = time.Now()
	}
	if st.UpdatedAt.IsZero() {
		st.UpdatedAt = st.CreatedAt
	}
	people, err := peopleJSON(st.People)
	if err != nil {
		return fmt.Errorf("save storage %s: %w", st.Name, err)
	}
	_, err = s.w.ExecContext(ctx, `INSERT INTO storages (id, name, kind, path, endpoint, bucket, region, prefix,
		access_key, secret, shared, people, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		st.ID, st.Name, st.Kind, st.Path, st.Endpoint, st.Bucket, st.Region, st.Prefix, st.AccessKey, st.Secret,
		boolInt(st.Shared), people, formatTime(st.CreatedAt), formatTime(st.UpdatedAt))
	return storageWriteError("save", st.Name, err)
}

// UpdateStorage replaces every field of the stored storage st.ID but its creation time; the
// secret only when keepSecret is false. ErrNotFound when there is no such storage.
func (s *Store) UpdateStorage(ctx context.Context, st Storage, keepSecret bool) error {
	if st.UpdatedAt.IsZero() {
		st.UpdatedAt = time.Now()
	}
	people, err := peopleJSON(st.People)
	if err != nil {
		return fmt.Errorf("update storage %s: %w", st.Name, err)
	}
	res, err := s.w.ExecContext(ctx, `UPDATE storages SET name = ?, kind = ?, path = ?, endpoint = ?, bucket = ?,
		region = ?, prefix = ?, access_key = ?, secret = CASE WHEN ? THEN secret ELSE ? END, shared = ?, people = ?,
		updated_at = ? WHERE id = ?`,
		st.Name, st.Kind, st.Path, st.Endpoint, st.Bucket, st.Region, st.Prefix, st.AccessKey, boolInt(keepSecret),
		st.Secret, boolInt(st.Shared), people, formatTime(st.UpdatedAt), st.ID)
	if err := storageWriteError("update", st.Name, err); err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("update storage %s: %w", st.ID, ErrNotFound)
	}
	return nil
}

// Storages lists the stored storages, oldest first, without their secrets.
func (s *Store) Storages(ctx context.Context) ([]Storage, error) {
	return queryRows(ctx, s, "list storages", scanStorage, `SELECT `+storageColumns+` FROM storages ORDER BY created_at, id`)
}

// StorageByID is the storage id, without its secret; ErrNotFound when there is none.
func (s *Store) StorageByID(ctx context.Context, id string) (Storage, error) {
	st, err := scanStorage(s.r.QueryRowContext(ctx, `SELECT `+storageColumns+` FROM storages WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Storage{}, fmt.Errorf("storage %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Storage{}, fmt.Errorf("storage %s: %w", id, err)
	}
	return st, nil
}

// StorageSecret is the secret stored for the storage id ("" when none): for the client that
// sends it, never for a listing.
func (s *Store) StorageSecret(ctx context.Context, id string) (string, error) {
	var secret string
	err := s.r.QueryRowContext(ctx, `SELECT secret FROM storages WHERE id = ?`, id).Scan(&secret)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("storage %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("storage %s: %w", id, err)
	}
	return secret, nil
}

// DeleteStorage removes the storage id; ErrNotFound when there is none.
func (s *Store) DeleteStorage(ctx context.Context, id string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM storages WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("remove storage %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("remove storage %s: %w", id, ErrNotFound)
	}
	return nil
}

func storageWriteError(verb, name string, err error) error {
	if err == nil {
		return nil
	}
	if strings.Contains(err.Error(), "UNIQUE constraint failed: storages.name") {
		return fmt.Errorf("%s storage %s: %w", verb, name, ErrStorageNameTaken)
	}
	return fmt.Errorf("%s storage %s: %w", verb, name, err)
}

func peopleJSON(ids []string) (string, error) {
	if ids == nil {
		ids = []string{}
	}
	raw, err := json.Marshal(ids)
	return string(raw), err
}

func scanStorage(row interface{ Scan(...any) error }) (Storage, error) {
	var st Storage
	var people, created, updated string
	var hasSecret, shared int
	if err := row.Scan(&st.ID, &st.Name, &st.Kind, &st.Path, &st.Endpoint, &st.Bucket, &st.Region, &st.Prefix,
		&st.AccessKey, &hasSecret, &shared, &people, &created, &updated); err != nil {
		return st, err
	}
	st.HasSecret, st.Shared = hasSecret == 1, shared == 1
	if err := json.Unmarshal([]byte(people), &st.People); err != nil {
		return st, fmt.Errorf("storage %s: people: %w", st.ID, err)
	}
	var err error
	if st.CreatedAt, err = parseTime(created); err != nil {
		return st, fmt.Errorf("storage %s: created_at: %w", st.ID, err)
	}
	if st.UpdatedAt, err = parseTime(updated); err != nil {
		return st, fmt.Errorf("storage %s: updated_at: %w", st.ID, err)
	}
	return st, nil
}
