// Package people is team mode's accounts (superfluid serve --team): the people who use the
// server, each with a name, an argon2id password hash, a role (admin or member) and a state
// (active or disabled), and the audit log every write of theirs appends to.
//
// The Service is what the CLI (superfluid users) and the admin API (/v1/admin/users) call; it
// knows nothing of HTTP. Keys belong to a person through the keyring (package auth), which
// reads the people table itself: a person disabled here has their keys dropped from this
// process's keyring at once (the Service reloads it), and from other processes' keyrings at
// their next reread. Who made a change is an Actor, taken from the request's auth.Identity or
// named by the CLI.
package people

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/store"
)

// Errors of the Service.
var (
	// ErrInvalid: a bad name, password, role or state.
	ErrInvalid = errors.New("invalid person settings")
	// ErrNameTaken: a person already has that name (without regard to case).
	ErrNameTaken = errors.New("a person with this name exists")
	// ErrNotFound: nobody has that name or id.
	ErrNotFound = errors.New("no such person")
	// ErrWrongPassword: Verify's name or password is wrong (which one is not said).
	ErrWrongPassword = errors.New("wrong name or password")
	// ErrDisabled: Verify's person is disabled.
	ErrDisabled = errors.New("the person is disabled")
	// ErrLastAdmin: the change would leave no active admin.
	ErrLastAdmin = errors.New("the last active admin")
)

// Role is what a person may do: an admin manages people, keys and models; a member uses them.
type Role string

// Roles.
const (
	RoleAdmin  Role = auth.RoleAdmin
	RoleMember Role = "member"
)

// ParseRole reads a role; "" is a member.
func ParseRole(s string) (Role, error) {
	switch r := Role(strings.ToLower(strings.TrimSpace(s))); r {
	case "", RoleMember:
		return RoleMember, nil
	case RoleAdmin:
		return r, nil
	}
	return "", fmt.Errorf("%w: unknown role %q: use admin or member", ErrInvalid, s)
}

// State is whether a person may use the server.
type State string

// States.
const (
	StateActive   State = "active"
	StateDisabled State = "disabled"
)

// ParseState reads a state.
func ParseState(s string) (State, error) {
	switch st := State(strings.ToLower(strings.TrimSpace(s))); st {
	case StateActive, StateDisabled:
		return st, nil
	}
	return "", fmt.Errorf("%w: unknown state %q: use active or disabled", ErrInvalid, s)
}

// Person is one account; never its password or hash.
type Person struct {
	ID, Name             string
	Role                 Role
	State                State
	CreatedAt, UpdatedAt time.Time
}

// KeyReloader is the keyring (auth.Keyring): reloaded after every change that alters what a
// person's keys may do, so a disabled person's keys stop working at once.
type KeyReloader interface {
	Reload(ctx context.Context) error
}

// Config configures a Service.
type Config struct {
	Store *store.Store
	// Keys is reloaded after a change of state or role; nil reloads nothing.
	Keys KeyReloader
	// Hash is the password hashing cost; zero is DefaultHashParams. Only tests lower it.
	Hash HashParams
}

// Service manages the people of one database.
type Service struct {
	st   *store.Store
	keys KeyReloader
	hash HashParams
	// mu serializes this process's writes, so the last-admin check and its write are one step.
	mu sync.Mutex
	// dummy is a hash Verify checks an unknown name's password against, so an unknown name
	// costs what a wrong password does.
	dummy string
	// disabled hear of each person disabled (OnDisable), in the order they were set.
	disabled []func(ctx context.Context, p Person)
}

// OnDisable makes fn hear of every person disabled from now on, after the change is stored and
// audited (team mode ends their bookings and web sessions), after the fns set before it. Set
// it before the service is used.
func (s *Service) OnDisable(fn func(ctx context.Context, p Person)) {
	s.disabled = append(s.disabled, fn)
}

// New returns the Service over cfg.Store.
func New(cfg Config) *Service {
	h := cfg.Hash
	if h == (HashParams{}) {
		h = DefaultHashParams
	}
	return &Service{st: cfg.Store, keys: cfg.Keys, hash: h, dummy: hashPassword(GeneratePassword(), h)}
}

// NewPerson is what Create makes.
type NewPerson struct {
	Name, Password string
	Role           Role // "" is a member
}

// CheckName accepts a person's name: 1 to 64 letters, digits, '.', '_', '-' or '@', not
// starting with "person-" (the ids' form, so that a name or an id names one person).
func CheckName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("%w: a name is 1 to 64 characters, got %q", ErrInvalid, name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-@", r)) {
			return fmt.Errorf("%w: a name has letters, digits, '.', '_', '-' and '@' only, got %q", ErrInvalid, name)
		}
	}
	if strings.HasPrefix(strings.ToLower(name), "person-") {
		return fmt.Errorf("%w: a name cannot start with \"person-\" (ids do), got %q", ErrInvalid, name)
	}
	return nil
}

// Create stores a new active person.
func (s *Service) Create(ctx context.Context, by Actor, np NewPerson) (Person, error) {
	np.Name = strings.TrimSpace(np.Name)
	if err := CheckName(np.Name); err != nil {
		return Person{}, err
	}
	role, err := ParseRole(string(np.Role))
	if err != nil {
		return Person{}, err
	}
	if err := checkNewPassword(np.Password); err != nil {
		return Person{}, err
	}
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	now := time.Now().UTC()
	rec := store.Person{ID: "person-" + hex.EncodeToString(id), Name: np.Name, PasswordHash: hashPassword(np.Password, s.hash),
		Role: string(role), State: string(StateActive), CreatedAt: now, UpdatedAt: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.st.InsertPerson(ctx, rec); err != nil {
		if errors.Is(err, store.ErrPersonNameTaken) {
			return Person{}, fmt.Errorf("%w: %q", ErrNameTaken, np.Name)
		}
		return Person{}, err
	}
	p := personOf(rec)
	return p, s.Record(ctx, by, "user.create", p.Name, map[string]any{"id": p.ID, "role": p.Role})
}

// List returns every person, oldest first.
func (s *Service) List(ctx context.Context) ([]Person, error) {
	recs, err := s.st.People(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Person, 0, len(recs))
	for _, r := range recs {
		out = append(out, personOf(r))
	}
	return out, nil
}

// Get returns the person with this id or name.
func (s *Service) Get(ctx context.Context, nameOrID string) (Person, error) {
	rec, err := s.get(ctx, nameOrID)
	return personOf(rec), err
}

func (s *Service) get(ctx context.Context, nameOrID string) (store.Person, error) {
	rec, err := s.st.PersonByNameOrID(ctx, strings.TrimSpace(nameOrID))
	if errors.Is(err, store.ErrNotFound) {
		return rec, fmt.Errorf("%w: nobody is named %q or has that id (superfluid users list shows them)", ErrNotFound, nameOrID)
	}
	return rec, err
}

// Change is what Update changes; nil fields stay.
type Change struct {
	Role     *Role
	State    *State
	Password *string
}

// Update changes a person's role, state or password. It refuses to leave no active admin.
// A change of role or state applies to the person's keys at once in this process.
func (s *Service) Update(ctx context.Context, by Actor, nameOrID string, ch Change) (Person, error) {
	var role Role
	var state State
	var err error
	if ch.Role != nil {
		if role, err = ParseRole(string(*ch.Role)); err != nil || *ch.Role == "" {
			return Person{}, fmt.Errorf("%w: unknown role %q: use admin or member", ErrInvalid, *ch.Role)
		}
	}
	if ch.State != nil {
		if state, err = ParseState(string(*ch.State)); err != nil {
			return Person{}, err
		}
	}
	if ch.Password != nil {
		if err := checkNewPassword(*ch.Password); err != nil {
			return Person{}, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, err := s.get(ctx, nameOrID)
	if err != nil {
		return Person{}, err
	}
	before := rec
	detail := map[string]any{"id": rec.ID}
	if ch.Role != nil && string(role) != rec.Role {
		detail["role"] = map[string]string{"from": rec.Role, "to": string(role)}
		rec.Role = string(role)
	}
	if ch.State != nil && string(state) != rec.State {
		detail["state"] = map[string]string{"from": rec.State, "to": string(state)}
		rec.State = string(state)
	}
	if ch.Password != nil {
		rec.PasswordHash = hashPassword(*ch.Password, s.hash)
		detail["password"] = "changed"
	}
	if len(detail) == 1 {
		return personOf(rec), nil // nothing changes: nothing to write or audit
	}
	if isActiveAdmin(before) && !isActiveAdmin(rec) {
		if err := s.keepAnAdmin(ctx, rec.ID); err != nil {
			return Person{}, err
		}
	}
	rec.UpdatedAt = time.Now().UTC()
	if err := s.st.UpdatePerson(ctx, rec); err != nil {
		return Person{}, err
	}
	if rec.Role != before.Role || rec.State != before.State {
		if s.keys != nil {
			if err := s.keys.Reload(ctx); err != nil {
				return Person{}, fmt.Errorf("%s changed, but the keys were not reloaded (they will be at the next reread): %w", rec.Name, err)
			}
		}
	}
	p := personOf(rec)
	if err := s.Record(ctx, by, updateAction(before, rec, ch), p.Name, detail); err != nil {
		return p, err
	}
	if rec.State != before.State && rec.State == string(StateDisabled) {
		for _, fn := range s.disabled {
			fn(ctx, p)
		}
	}
	return p, nil
}

// updateAction names a change for the audit log: user.disable, user.enable, user.role,
// user.passwd, or user.update for several at once.
func updateAction(before, after store.Person, ch Change) string {
	var actions []string
	if before.State != after.State {
		actions = append(actions, map[string]string{string(StateDisabled): "user.disable", string(StateActive): "user.enable"}[after.State])
	}
	if before.Role != after.Role {
		actions = append(actions, "user.role")
	}
	if ch.Password != nil {
		actions = append(actions, "user.passwd")
	}
	if len(actions) == 1 {
		return actions[0]
	}
	return "user.update"
}

func isActiveAdmin(p store.Person) bool {
	return p.Role == string(RoleAdmin) && p.State == string(StateActive)
}

// keepAnAdmin refuses when nobody but the person with id is an active admin.
func (s *Service) keepAnAdmin(ctx context.Context, id string) error {
	all, err := s.st.People(ctx)
	if err != nil {
		return err
	}
	for _, p := range all {
		if p.ID != id && isActiveAdmin(p) {
			return nil
		}
	}
	return fmt.Errorf("%w: nobody else could manage the server; make another person an admin first", ErrLastAdmin)
}

// Disable stops a person: their keys stop working at once, their password is refused.
func (s *Service) Disable(ctx context.Context, by Actor, nameOrID string) (Person, error) {
	st := StateDisabled
	return s.Update(ctx, by, nameOrID, Change{State: &st})
}

// Enable lets a disabled person back in, keys and password.
func (s *Service) Enable(ctx context.Context, by Actor, nameOrID string) (Person, error) {
	st := StateActive
	return s.Update(ctx, by, nameOrID, Change{State: &st})
}

// SetPassword replaces a person's password.
func (s *Service) SetPassword(ctx context.Context, by Actor, nameOrID, password string) (Person, error) {
	return s.Update(ctx, by, nameOrID, Change{Password: &password})
}

// Verify checks a person's name and password: ErrWrongPassword when either is wrong (an
// unknown name costs as much as a wrong password), ErrDisabled when both are right but the
// person is disabled.
func (s *Service) Verify(ctx context.Context, name, password string) (Person, error) {
	rec, err := s.st.PersonByNameOrID(ctx, strings.TrimSpace(name))
	if errors.Is(err, store.ErrNotFound) || err == nil && rec.ID == strings.TrimSpace(name) {
		_, _ = checkPassword(password, s.dummy) // only names sign in, never ids
		return Person{}, ErrWrongPassword
	}
	if err != nil {
		return Person{}, err
	}
	if len(password) > MaxPasswordLen {
		_, _ = checkPassword("", s.dummy)
		return Person{}, ErrWrongPassword
	}
	ok, err := checkPassword(password, rec.PasswordHash)
	if err != nil {
		return Person{}, fmt.Errorf("the password of %s cannot be checked: %w", rec.Name, err)
	}
	if !ok {
		return Person{}, ErrWrongPassword
	}
	if rec.State != string(StateActive) {
		return Person{}, fmt.Errorf("%w: %s", ErrDisabled, rec.Name)
	}
	return personOf(rec), nil
}

func personOf(r store.Person) Person {
	return Person{ID: r.ID, Name: r.Name, Role: Role(r.Role), State: State(r.State), CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}
