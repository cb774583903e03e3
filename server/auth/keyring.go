package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/superfluid/superfluid/server/core/qos"
	"github.com/superfluid/superfluid/server/store"
)

// KeyPrefix starts every key superfluid makes for nobody: sk-sf- and 48 hex digits (192 random
// bits).
const KeyPrefix = "sk-sf-"

// PersonKeyPrefix starts the keys made for a person (team mode): sk-ss- and 48 hex digits.
const PersonKeyPrefix = "sk-ss-"

// Errors of the keyring's Create and Revoke.
var (
	// ErrKeyNotFound: no active key has that name or id.
	ErrKeyNotFound = errors.New("no such key")
	// ErrKeyExists: an active key already has that name.
	ErrKeyExists = errors.New("a key with this name exists")
	// ErrInvalidKey: a bad name, model list, QoS class, limit or origin.
	ErrInvalidKey = errors.New("invalid key settings")
	// ErrConfiguredKey: the key comes from --api-key or --key-policy, not from the database.
	ErrConfiguredKey = errors.New("the key is configured on the command line")
	// ErrNoStore: the keyring keeps no keys of its own.
	ErrNoStore = errors.New("keys cannot be stored here")
)

// DefaultRefresh is how often a started keyring (Start) reads the stored keys again, so keys
// created or revoked by another process (superfluid keys on the same data directory) take
// effect in a running server. Keys created or revoked through the server's own keyring take
// effect at once.
const DefaultRefresh = 2 * time.Second

// Generate returns a new random key: KeyPrefix and 48 hex digits.
func Generate() string { return generate(KeyPrefix) }

func generate(prefix string) string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics if the system has no source)
	return prefix + hex.EncodeToString(b)
}

// Hash is a key's SHA-256: what is stored and compared.
func Hash(key string) [32]byte { return sha256.Sum256([]byte(key)) }

// Key is a configured key: its identity and hash.
type Key struct {
	Identity Identity
	Hash     [32]byte
}

// APIKey is the key of --api-key: one admin key, named "api-key".
func APIKey(key string) (Key, error) {
	if err := checkSecret(key); err != nil {
		return Key{}, fmt.Errorf("--api-key: %w", err)
	}
	return Key{Identity: Identity{ID: "api-key", Name: "api-key", Admin: true, Source: SourceFlag}, Hash: Hash(key)}, nil
}

// checkSecret accepts a key a client can send in a header: printable ASCII, no spaces.
func checkSecret(key string) error {
	if key == "" {
		return errors.New("the key is empty")
	}
	for _, r := range key {
		if r <= ' ' || r > '~' {
			return errors.New("a key is printable ASCII without spaces (clients send it in a header)")
		}
	}
	return nil
}

// Config configures a Keyring.
type Config struct {
	// Keys are the configured keys (--api-key, --key-policy).
	Keys []Key
	// Store keeps the keys created at run time; nil keeps none (Create and Revoke fail).
	Store *store.Store
	// Refresh is how often a started keyring reads the stored keys again (0: DefaultRefresh).
	Refresh time.Duration
	// Required makes every request need a key even when none exists yet (a server bound to a
	// non-loopback address); it can change later with SetRequired.
	Required bool
}

// Keyring turns a presented key into an Identity. It holds an immutable snapshot of every
// active key by hash: an unknown key is one map lookup and leaves nothing behind. A started
// keyring (Start) rereads the stored keys on a timer of its own, so that what another process
// changed applies whether or not requests arrive; a request never waits for the database.
type Keyring struct {
	configured []Key
	st         *store.Store
	refresh    time.Duration
	required   atomic.Bool

	snap atomic.Pointer[snapshot]
	mu   sync.Mutex // serializes reloads, so the last one read is the newest

	life     sync.Mutex         // guards cancel and stopped
	cancel   context.CancelFunc // ends the refresh loop; nil until Start
	stopped  chan struct{}      // closed when the refresh loop has returned
	reloads  atomic.Int64       // reads of the stored keys that succeeded
	failures atomic.Int64       // rereads failed in a row, so the log gets the first and then rarely
}

type snapshot struct {
	byHash  map[[32]byte]entry
	origins []string // every active key's origin patterns
}

type entry struct {
	hash [32]byte
	id   *Identity
}

// New loads the stored keys and returns the keyring.
func New(ctx context.Context, cfg Config) (*Keyring, error) {
	k := &Keyring{configured: cfg.Keys, st: cfg.Store, refresh: cfg.Refresh}
	if k.refresh <= 0 {
		k.refresh = DefaultRefresh
	}
	k.required.Store(cfg.Required)
	seen := map[[32]byte]bool{}
	names := map[string]bool{}
	for _, c := range cfg.Keys {
		if seen[c.Hash] {
			return nil, fmt.Errorf("%w: the key of %q is configured twice", ErrInvalidKey, c.Identity.Name)
		}
		if names[c.Identity.Name] {
			return nil, fmt.Errorf("%w: two configured keys are named %q", ErrInvalidKey, c.Identity.Name)
		}
		seen[c.Hash], names[c.Identity.Name] = true, true
	}
	if err := k.Reload(ctx); err != nil {
		return nil, err
	}
	return k, nil
}

// SetRequired sets whether requests need a key even when no key exists.
func (k *Keyring) SetRequired(on bool) { k.required.Store(on) }

// Enabled reports whether requests need a key: a key exists (configured or stored and not
// revoked), or keys are required.
func (k *Keyring) Enabled() bool {
	return k != nil && (k.required.Load() || len(k.snap.Load().byHash) > 0)
}

// HasKeys reports whether any key is active (configured, or stored and not revoked).
func (k *Keyring) HasKeys() bool { return k != nil && len(k.snap.Load().byHash) > 0 }

// Size is the number of identities the keyring holds (active keys). Authenticating unknown
// keys never changes it: tests use it to check that nothing is kept per unknown key.
func (k *Keyring) Size() int { return len(k.snap.Load().byHash) }

// KeyOrigin reports whether origin is one an active key names in its origins: CORS answers
// those as well as the server's own list.
func (k *Keyring) KeyOrigin(origin string) bool {
	if k == nil {
		return false
	}
	return slices.ContainsFunc(k.snap.Load().origins, func(p string) bool { return MatchOrigin(p, origin) })
}

// Authenticate returns the identity of an active key. The presented key is hashed and the
// hash compared in constant time with crypto/subtle.
func (k *Keyring) Authenticate(key string) (*Identity, bool) {
	if k == nil || key == "" {
		return nil, false
	}
	h := Hash(key)
	e, ok := k.snap.Load().byHash[h]
	// The map found the hash; compare it again in constant time, so that the decision never
	// rests on a byte-by-byte comparison of secrets or their hashes.
	if !ok || subtle.ConstantTimeCompare(e.hash[:], h[:]) != 1 {
		return nil, false
	}
	return e.id, true
}

// Start rereads the stored keys every refresh interval until Close, independent of requests:
// a key created by another process (superfluid keys create) turns keys on in a server that had
// none, and a key revoked there is refused from the first request after the next reread. A
// keyring without a store, or one already started, does nothing.
func (k *Keyring) Start() {
	k.life.Lock()
	defer k.life.Unlock()
	if k.st == nil || k.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	k.cancel, k.stopped = cancel, make(chan struct{})
	go k.refreshLoop(ctx, k.stopped)
}

// Close stops the rereads Start began, cancelling the one under way, and waits for them to
// end; it is safe to call more than once, and on a keyring never started.
func (k *Keyring) Close() {
	if k == nil {
		return
	}
	k.life.Lock()
	cancel, stopped := k.cancel, k.stopped
	k.life.Unlock()
	if cancel != nil {
		cancel()
		<-stopped
	}
}

func (k *Keyring) refreshLoop(ctx context.Context, stopped chan<- struct{}) {
	defer close(stopped)
	t := time.NewTicker(k.refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second) // a locked database cannot stall the loop
		err := k.Reload(rctx)
		cancel()
		switch {
		case err == nil:
			k.failures.Store(0)
		case ctx.Err() != nil:
			return
		default:
			if n := k.failures.Add(1); n&(n-1) == 0 { // the 1st, 2nd, 4th, 8th... failure in a row
				slog.Warn("API keys not reread; the ones read before still apply", "err", err, "failures", n)
			}
		}
	}
}

// Reloads counts the successful reads of the stored keys (New's, Create's, Revoke's and the
// timer's).
func (k *Keyring) Reloads() int64 { return k.reloads.Load() }

// Reload reads the stored keys now.
func (k *Keyring) Reload(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	byHash := make(map[[32]byte]entry, len(k.configured))
	for _, c := range k.configured {
		id := c.Identity
		byHash[c.Hash] = entry{c.Hash, &id}
	}
	if k.st != nil {
		keys, err := k.st.Keys(ctx, false)
		if err != nil {
			return fmt.Errorf("read API keys: %w", err)
		}
		people, err := k.people(ctx, keys)
		if err != nil {
			return err
		}
		for _, s := range keys {
			if _, dup := byHash[s.Hash]; dup {
				continue // a configured key wins
			}
			id := identityOf(s)
			if s.PersonID != "" {
				p, ok := people[s.PersonID]
				if !ok || p.State != stateActive {
					continue // a disabled person's keys stop working
				}
				withPerson(&id, p)
			}
			byHash[s.Hash] = entry{s.Hash, &id}
		}
	}
	var origins []string
	for _, e := range byHash {
		for _, o := range e.id.Origins {
			if !slices.Contains(origins, o) {
				origins = append(origins, o)
			}
		}
	}
	k.snap.Store(&snapshot{byHash: byHash, origins: origins})
	k.reloads.Add(1)
	return nil
}

// stateActive is the state of a person whose keys work.
const stateActive = "active"

// people reads the people the keys belong to, by id; none when no key belongs to anybody, so
// single-user mode reads nothing more than before.
func (k *Keyring) people(ctx context.Context, keys []store.Key) (map[string]store.Person, error) {
	if !slices.ContainsFunc(keys, func(s store.Key) bool { return s.PersonID != "" }) {
		return nil, nil
	}
	list, err := k.st.People(ctx)
	if err != nil {
		return nil, fmt.Errorf("read API keys: %w", err)
	}
	byID := make(map[string]store.Person, len(list))
	for _, p := range list {
		byID[p.ID] = p
	}
	return byID, nil
}

// withPerson gives a person's key the person, and the person's role decides admin.
func withPerson(id *Identity, p store.Person) {
	id.Person = &Person{ID: p.ID, Name: p.Name, Role: p.Role}
	id.Admin = p.Role == RoleAdmin
}

func identityOf(s store.Key) Identity {
	q, _ := qos.Parse(s.QoS)
	return Identity{ID: s.ID, Name: s.Name, Admin: s.Admin, Models: s.Models, QoS: q, Origins: s.Origins, Source: SourceStore,
		Limits: Limits{RPM: s.RPM, TPM: s.TPM, Concurrency: s.Concurrency}}
}

// Info describes a key for a list: never the key itself.
type Info struct {
	Identity
	// Prefix is the key's first characters ("sk-sf-1a2b3c"); "" for a configured key.
	Prefix    string
	CreatedAt time.Time
	// RevokedAt is zero while the key is active.
	RevokedAt time.Time
	// Disabled is set for the key of a disabled (or vanished) person: listed, but it
	// authenticates nothing, and nothing may act as it (a batch it made).
	Disabled bool
}

// NewKey is what Create makes.
type NewKey struct {
	Name    string
	Admin   bool
	Models  []string
	QoS     qos.Class
	Limits  Limits
	Origins []string
	// Person, when set, is the name or id of the person the key is for: it becomes an sk-ss-
	// key, an admin key exactly when the person is an admin (Admin must be false).
	Person string
}

// Create stores a new key and returns it: the only time the key itself is seen. It works at
// once in this keyring, and in other processes on the same database within their refresh.
func (k *Keyring) Create(ctx context.Context, nk NewKey) (key string, info Info, err error) {
	if k.st == nil {
		return "", Info{}, ErrNoStore
	}
	if err := k.check(&nk); err != nil {
		return "", Info{}, err
	}
	key = Generate()
	var person store.Person
	if nk.Person != "" {
		if person, err = k.owner(ctx, nk); err != nil {
			return "", Info{}, err
		}
		key = generate(PersonKeyPrefix)
	}
	idHex := make([]byte, 8)
	_, _ = rand.Read(idHex)
	rec := store.Key{ID: "key-" + hex.EncodeToString(idHex), Name: nk.Name, Prefix: key[:len(KeyPrefix)+6], Hash: Hash(key),
		Admin: nk.Admin, Models: nk.Models, Origins: nk.Origins, QoS: nk.QoS.String(),
		RPM: nk.Limits.RPM, TPM: nk.Limits.TPM, Concurrency: nk.Limits.Concurrency, CreatedAt: time.Now().UTC(), PersonID: person.ID}
	if err := k.st.InsertKey(ctx, rec); err != nil {
		if errors.Is(err, store.ErrKeyNameTaken) {
			return "", Info{}, fmt.Errorf("%w: %q; revoke it first or pick another name", ErrKeyExists, nk.Name)
		}
		return "", Info{}, err
	}
	if err := k.Reload(ctx); err != nil {
		return "", Info{}, err
	}
	info = infoOf(rec)
	if person.ID != "" {
		withPerson(&info.Identity, person)
	}
	return key, info, nil
}

// owner finds the active person a new key is for.
func (k *Keyring) owner(ctx context.Context, nk NewKey) (store.Person, error) {
	if nk.Admin {
		return store.Person{}, fmt.Errorf("%w: a person's key is an admin key exactly when the person is an admin; drop admin", ErrInvalidKey)
	}
	p, err := k.st.PersonByNameOrID(ctx, strings.TrimSpace(nk.Person))
	if errors.Is(err, store.ErrNotFound) {
		return p, fmt.Errorf("%w: no person is named %q (superfluid users list shows them)", ErrInvalidKey, nk.Person)
	}
	if err != nil {
		return p, err
	}
	if p.State != stateActive {
		return p, fmt.Errorf("%w: %s is disabled; enable them first (superfluid users enable %s)", ErrInvalidKey, p.Name, p.Name)
	}
	return p, nil
}

// check validates and normalizes a new key's settings.
func (k *Keyring) check(nk *NewKey) error {
	nk.Name = strings.TrimSpace(nk.Name)
	if err := CheckName(nk.Name); err != nil {
		return err
	}
	for _, c := range k.configured {
		if c.Identity.Name == nk.Name {
			return fmt.Errorf("%w: %q is the name of a key from --api-key or --key-policy; pick another name", ErrKeyExists, nk.Name)
		}
	}
	var err error
	if nk.Models, err = cleanList(nk.Models, "model"); err != nil {
		return err
	}
	if nk.QoS < qos.Unset || nk.QoS > qos.Interactive {
		return fmt.Errorf("%w: unknown QoS class %d", ErrInvalidKey, nk.QoS)
	}
	if nk.Limits.RPM < 0 || nk.Limits.TPM < 0 || nk.Limits.Concurrency < 0 {
		return fmt.Errorf("%w: rpm, tpm and concurrency are 0 (no limit) or more", ErrInvalidKey)
	}
	origins := nk.Origins[:0:0]
	for _, o := range nk.Origins {
		p, err := CheckOrigin(o)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidKey, err)
		}
		origins = append(origins, p)
	}
	nk.Origins = origins
	return nil
}

// CheckName accepts a key name: 1 to 64 letters, digits, '.', '_', '-' or '@', not starting
// with "key-" (the ids' form, so that a name or an id names one key).
func CheckName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("%w: a key's name is 1 to 64 characters, got %q", ErrInvalidKey, name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-@", r)) {
			return fmt.Errorf("%w: a key's name has letters, digits, '.', '_', '-' and '@' only, got %q", ErrInvalidKey, name)
		}
	}
	if strings.HasPrefix(name, "key-") {
		return fmt.Errorf("%w: a key's name cannot start with \"key-\" (ids do), got %q", ErrInvalidKey, name)
	}
	return nil
}

// cleanList trims the entries of a list, drops duplicates and refuses empty ones.
func cleanList(list []string, what string) ([]string, error) {
	var out []string
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, fmt.Errorf("%w: an empty %s name", ErrInvalidKey, what)
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// List describes the configured keys, then the stored ones (revoked ones too when
// withRevoked is set), oldest first.
func (k *Keyring) List(ctx context.Context, withRevoked bool) ([]Info, error) {
	var out []Info
	for _, c := range k.configured {
		out = append(out, Info{Identity: c.Identity})
	}
	if k.st == nil {
		return out, nil
	}
	keys, err := k.st.Keys(ctx, withRevoked)
	if err != nil {
		return nil, err
	}
	people, err := k.people(ctx, keys)
	if err != nil {
		return nil, err
	}
	for _, s := range keys {
		info := infoOf(s)
		if s.PersonID != "" {
			p, ok := people[s.PersonID]
			if ok {
				withPerson(&info.Identity, p)
			}
			info.Disabled = !ok || p.State != stateActive // as Reload drops it
		}
		out = append(out, info)
	}
	return out, nil
}

// Revoke revokes the stored key with this name or id; it stops working at once in this
// keyring. A configured key cannot be revoked here: it is removed from its file or flag.
func (k *Keyring) Revoke(ctx context.Context, nameOrID string) (Info, error) {
	for _, c := range k.configured {
		if c.Identity.Name == nameOrID || c.Identity.ID == nameOrID {
			return Info{}, fmt.Errorf("%w: %q comes from --%s; remove it there and restart the server", ErrConfiguredKey, nameOrID,
				map[string]string{SourceFlag: "api-key", SourcePolicy: "key-policy"}[c.Identity.Source])
		}
	}
	if k.st == nil {
		return Info{}, ErrNoStore
	}
	rec, err := k.st.RevokeKey(ctx, nameOrID, time.Now())
	if errors.Is(err, store.ErrNotFound) {
		return Info{}, fmt.Errorf("%w: no active key is named %q or has that id (superfluid keys list shows them)", ErrKeyNotFound, nameOrID)
	}
	if err != nil {
		return Info{}, err
	}
	if err := k.Reload(ctx); err != nil {
		return Info{}, err
	}
	return infoOf(rec), nil
}

func infoOf(s store.Key) Info {
	return Info{Identity: identityOf(s), Prefix: s.Prefix, CreatedAt: s.CreatedAt, RevokedAt: s.RevokedAt}
}
