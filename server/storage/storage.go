// Package storage is where models and files live besides the models folder: a local folder, an
// S3-compatible bucket, or an SMB or NFS share already mounted (a directory). An admin registers
// storages (the web API's /api/admin/storage); a person may use the shared ones and those that
// list them.
//
// The Service keeps them in SQLite (server/store, table storages). An S3 storage's secret key
// is write-only: Create and Update store it, no read returns it (Storage.HasSecret says whether
// one is stored), and no error or Check reason carries it. Update's Spec.Secret is a pointer:
// nil keeps the stored secret, "" clears it, anything else replaces it.
//
// Every storage opens as Objects (Put, Get, Stat, List, Delete by name), which the catalog
// uses to keep models there. Names come from the network, so each is checked (CheckName: no
// "..", no absolute path, no NUL or backslash) and a local storage is opened through os.Root,
// which also refuses a symbolic link that leads out of its folder.
//
// Check proves access: it writes a probe object, reads it back, compares and deletes it. For
// smb and nfs it adds a warning (not a failure) when the folder is not a mount point
// (/proc/self/mountinfo): the share may not be mounted and the files would land on the local
// disk.
//
// The package has no gin: the routes are server/web's. Audit entries go through the By its
// caller names (people.Service.Record bound to the request's actor).
package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/superfluid/superfluid/server/store"
)

// Kinds of storage.
const (
	KindLocal = "local"
	KindS3    = "s3"
	KindSMB   = "smb"
	KindNFS   = "nfs"
)

// Kinds lists the kinds, in the order documentation shows them.
var Kinds = []string{KindLocal, KindS3, KindSMB, KindNFS}

// Errors of the Service.
var (
	// ErrInvalid: a bad field (a *FieldError wraps it and names the field).
	ErrInvalid = errors.New("invalid storage")
	// ErrNotFound: no storage has that id.
	ErrNotFound = errors.New("no such storage")
	// ErrNameTaken: another storage has the name.
	ErrNameTaken = errors.New("a storage already has this name")
	// ErrUnavailable: the storage cannot be read now (a folder gone, an S3 server refusing).
	ErrUnavailable = errors.New("the storage cannot be read")
	// ErrObjectNotFound: the storage holds no object of that name.
	ErrObjectNotFound = errors.New("no such object")
	// ErrBadName: an object name that is empty, absolute, climbs with "..", or holds NUL or a
	// backslash.
	ErrBadName = errors.New("invalid object name")
)

// FieldError is an ErrInvalid naming the field (its JSON name) that is wrong.
type FieldError struct {
	Field, Message string
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Message) }

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *FieldError) Unwrap() error { return ErrInvalid }

func invalid(field, format string, args ...any) error {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// Audit actions.
const (
	ActionCreate = "storage.create"
	ActionUpdate = "storage.update"
	ActionDelete = "storage.delete"
)

// Storage is a stored storage, without its secret.
type Storage = store.Storage

// Spec is what Create registers and Update replaces.
type Spec struct {
	Name string
	Kind string
	// Path is the folder of a local, smb or nfs storage (absolute; for smb and nfs, where the
	// share is mounted).
	Path string
	// Endpoint is an s3 storage's server: "https://host[:port]", "http://host:port" or
	// "host[:port]" (https).
	Endpoint, Bucket, Region, Prefix, AccessKey string
	// Secret is an s3 storage's secret key. In Update, nil keeps the stored one and "" clears
	// it; in Create, nil and "" both store none.
	Secret *string
	Shared bool
	People []string
}

// Limits of what may be registered.
const (
	maxName  = 64
	maxField = 1024
)

// By is who makes a change: where its audit entry goes (the web routes bind
// people.Service.Record to the request's actor; package people stays theirs alone).
type By struct {
	// Record appends an audit entry: action on target, with detail (no secret); nil records
	// none.
	Record func(ctx context.Context, action, target string, detail map[string]any) error
}

// Config is what a Service needs.
type Config struct {
	Store *store.Store
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// CheckTimeout bounds one Check (0: 15 s).
	CheckTimeout time.Duration
}

// Service registers, lists, checks and opens storages.
type Service struct {
	cfg Config
}

// New returns a Service over cfg.Store.
func New(cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.CheckTimeout <= 0 {
		cfg.CheckTimeout = 15 * time.Second
	}
	return &Service{cfg: cfg}
}

// List is every storage, oldest first.
func (s *Service) List(ctx context.Context) ([]Storage, error) {
	return s.cfg.Store.Storages(ctx)
}

// ListFor is the storages the person whose id is personID may use: the shared ones and those
// listing the person.
func (s *Service) ListFor(ctx context.Context, personID string) ([]Storage, error) {
	all, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	var mine []Storage
	for _, st := range all {
		if MayUse(st, personID) {
			mine = append(mine, st)
		}
	}
	return mine, nil
}

// MayUse reports whether the person personID may use st.
func MayUse(st Storage, personID string) bool {
	return st.Shared || (personID != "" && slices.Contains(st.People, personID))
}

// Get is the storage id; ErrNotFound when there is none.
func (s *Service) Get(ctx context.Context, id string) (Storage, error) {
	st, err := s.cfg.Store.StorageByID(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return Storage{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return st, err
}

// Create registers a storage, audited as by's.
func (s *Service) Create(ctx context.Context, by By, sp Spec) (Storage, error) {
	st, err := normalize(sp)
	if err != nil {
		return Storage{}, err
	}
	if sp.Secret != nil {
		st.Secret = *sp.Secret
	}
	now := s.cfg.Now().UTC()
	st.ID, st.CreatedAt, st.UpdatedAt = newID(), now, now
	if err := s.cfg.Store.InsertStorage(ctx, st); err != nil {
		return Storage{}, nameError(err, st.Name)
	}
	st.HasSecret, st.Secret = st.Secret != "", ""
	return st, record(ctx, by, ActionCreate, st, sp.Secret != nil)
}

// Update replaces the storage id's settings with sp, audited as by's (sp.Secret nil keeps the
// stored secret).
func (s *Service) Update(ctx context.Context, by By, id string, sp Spec) (Storage, error) {
	old, err := s.Get(ctx, id)
	if err != nil {
		return Storage{}, err
	}
	st, err := normalize(sp)
	if err != nil {
		return Storage{}, err
	}
	st.ID, st.CreatedAt, st.UpdatedAt = old.ID, old.CreatedAt, s.cfg.Now().UTC()
	if sp.Secret != nil {
		st.Secret = *sp.Secret
	}
	if err := s.cfg.Store.UpdateStorage(ctx, st, sp.Secret == nil); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return Storage{}, fmt.Errorf("%w: %q", ErrNotFound, id)
		}
		return Storage{}, nameError(err, st.Name)
	}
	updated, err := s.Get(ctx, id)
	if err != nil {
		return Storage{}, err
	}
	return updated, record(ctx, by, ActionUpdate, updated, sp.Secret != nil)
}

// Delete unregisters the storage id, audited as by's. What it holds stays where it is.
func (s *Service) Delete(ctx context.Context, by By, id string) (Storage, error) {
	st, err := s.Get(ctx, id)
	if err != nil {
		return Storage{}, err
	}
	if err := s.cfg.Store.DeleteStorage(ctx, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return Storage{}, fmt.Errorf("%w: %q", ErrNotFound, id)
		}
		return Storage{}, err
	}
	return st, record(ctx, by, ActionDelete, st, false)
}

func nameError(err error, name string) error {
	if errors.Is(err, store.ErrStorageNameTaken) {
		return fmt.Errorf("%w: %q", ErrNameTaken, name)
	}
	return err
}

func record(ctx context.Context, by By, action string, st Storage, secretSet bool) error {
	if by.Record == nil {
		return nil
	}
	detail := map[string]any{"name": st.Name, "kind": st.Kind, "shared": st.Shared, "people": st.People}
	if action != ActionDelete {
		detail["secret_set"] = secretSet // whether this change wrote one, never what it is
	}
	return by.Record(ctx, action, st.ID, detail)
}

// normalize checks sp and turns it into a Storage (without ID, times or secret).
func normalize(sp Spec) (Storage, error) {
	st := Storage{Name: strings.TrimSpace(sp.Name), Kind: strings.ToLower(strings.TrimSpace(sp.Kind)),
		Path: strings.TrimSpace(sp.Path), Endpoint: strings.TrimSpace(sp.Endpoint), Bucket: strings.TrimSpace(sp.Bucket),
		Region: strings.TrimSpace(sp.Region), Prefix: strings.Trim(strings.TrimSpace(sp.Prefix), "/"),
		AccessKey: strings.TrimSpace(sp.AccessKey), Shared: sp.Shared}
	if st.Name == "" || len(st.Name) > maxName || !utf8.ValidString(st.Name) || strings.ContainsAny(st.Name, "\n\r\t\x00") {
		return st, invalid("name", "a name is one line of 1 to %d bytes", maxName)
	}
	for field, v := range map[string]string{"path": st.Path, "endpoint": st.Endpoint, "bucket": st.Bucket,
		"region": st.Region, "prefix": st.Prefix, "access_key": st.AccessKey} {
		if len(v) > maxField || !utf8.ValidString(v) || strings.ContainsAny(v, "\n\r\x00") {
			return st, invalid(field, "at most %d bytes on one line", maxField)
		}
	}
	if sp.Secret != nil && (len(*sp.Secret) > maxField || strings.ContainsAny(*sp.Secret, "\n\r\x00")) {
		return st, invalid("password", "at most %d bytes on one line", maxField)
	}
	seen := map[string]bool{}
	for _, id := range sp.People {
		id = strings.TrimSpace(id)
		if id == "" || len(id) > maxName {
			return st, invalid("people", "a person id is 1 to %d bytes", maxName)
		}
		if !seen[id] {
			seen[id] = true
			st.People = append(st.People, id)
		}
	}
	switch st.Kind {
	case KindLocal, KindSMB, KindNFS:
		if st.Path == "" || !filepath.IsAbs(st.Path) {
			return st, invalid("path", "a %s storage needs the absolute path of its folder", st.Kind)
		}
		st.Path = filepath.Clean(st.Path)
		if st.Endpoint != "" || st.Bucket != "" || st.AccessKey != "" || (sp.Secret != nil && *sp.Secret != "") {
			return st, invalid("endpoint", "a %s storage has a path, not an endpoint, bucket or keys", st.Kind)
		}
	case KindS3:
		if st.Path != "" {
			return st, invalid("path", "an s3 storage has an endpoint and a bucket, not a path")
		}
		if _, _, err := parseEndpoint(st.Endpoint); err != nil {
			return st, invalid("endpoint", "%v", err)
		}
		if st.Bucket == "" || strings.ContainsAny(st.Bucket, "/ ") {
			return st, invalid("bucket", "an s3 storage needs a bucket name (no '/' or spaces)")
		}
		if st.Prefix != "" {
			if err := CheckName(st.Prefix); err != nil {
				return st, invalid("prefix", "%v", err)
			}
		}
	default:
		return st, invalid("kind", "unknown kind %q: use one of %s", sp.Kind, strings.Join(Kinds, ", "))
	}
	return st, nil
}

// parseEndpoint splits an s3 endpoint into host[:port] and whether it is https.
func parseEndpoint(endpoint string) (host string, secure bool, err error) {
	if endpoint == "" {
		return "", false, errors.New("an s3 storage needs an endpoint (https://host[:port])")
	}
	if !strings.Contains(endpoint, "://") {
		endpoint = "https://" + endpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return "", false, fmt.Errorf("endpoint %q is not scheme://host[:port]", endpoint)
	}
	switch u.Scheme {
	case "https":
		return u.Host, true, nil
	case "http":
		return u.Host, false, nil
	}
	return "", false, fmt.Errorf("endpoint %q: use http or https", endpoint)
}

func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "storage-" + hex.EncodeToString(b)
}
