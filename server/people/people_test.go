package people

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/store"
)

// fastHash keeps the tests quick; servers always use DefaultHashParams.
var fastHash = HashParams{Memory: 64, Time: 1, Threads: 1}

func newTest(t *testing.T) (*Service, *auth.Keyring, *store.Store) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "superfluid.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	keys, err := auth.New(context.Background(), auth.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	return New(Config{Store: st, Keys: keys, Hash: fastHash}), keys, st
}

func TestPasswordHash(t *testing.T) {
	h := hashPassword("correct horse", DefaultHashParams)
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") || strings.Count(h, "$") != 5 {
		t.Fatalf("PHC string %q", h)
	}
	if h2 := hashPassword("correct horse", DefaultHashParams); h2 == h {
		t.Fatal("two hashes of one password are equal: no salt")
	}
	for pw, want := range map[string]bool{"correct horse": true, "correct horsE": false, "": false} {
		if ok, err := checkPassword(pw, h); err != nil || ok != want {
			t.Errorf("check %q: %v %v", pw, ok, err)
		}
	}
	for _, bad := range []string{"", "plain", "$argon2i$v=19$m=64,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
		"$argon2id$v=18$m=64,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA", "$argon2id$v=19$m=0,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
		"$argon2id$v=19$m=64,t=1,p=1$!!$aGFzaGhhc2hoYXNoaGFzaA"} {
		if _, err := checkPassword("x", bad); !errors.Is(err, errBadHash) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestCreateAndVerify: the bad inputs of Create, Verify's answers, the audit entries.
func TestCreateAndVerify(t *testing.T) {
	s, _, _ := newTest(t)
	ctx := context.Background()
	by := Actor{PersonID: "person-x", PersonName: "root", Key: "k", Via: "api"}
	alice, err := s.Create(ctx, by, NewPerson{Name: "alice", Password: "password1", Role: RoleAdmin})
	if err != nil || alice.Role != RoleAdmin || alice.State != StateActive || !strings.HasPrefix(alice.ID, "person-") {
		t.Fatalf("create: %+v %v", alice, err)
	}
	bad := []struct {
		name string
		np   NewPerson
		want error
	}{
		{"duplicate", NewPerson{Name: "Alice", Password: "password1"}, ErrNameTaken},
		{"empty password", NewPerson{Name: "bob"}, ErrInvalid},
		{"short password", NewPerson{Name: "bob", Password: "short"}, ErrInvalid},
		{"unknown role", NewPerson{Name: "bob", Password: "password1", Role: "owner"}, ErrInvalid},
		{"bad name", NewPerson{Name: "two words", Password: "password1"}, ErrInvalid},
		{"id-like name", NewPerson{Name: "person-1", Password: "password1"}, ErrInvalid},
		{"empty name", NewPerson{Password: "password1"}, ErrInvalid},
	}
	for _, c := range bad {
		if _, err := s.Create(ctx, by, c.np); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if p, err := s.Verify(ctx, "ALICE", "password1"); err != nil || p.ID != alice.ID {
		t.Fatalf("verify: %+v %v", p, err)
	}
	for _, c := range [][2]string{{"alice", "password2"}, {"carol", "password1"}, {alice.ID, "password1"}, {"alice", ""}} {
		if _, err := s.Verify(ctx, c[0], c[1]); !errors.Is(err, ErrWrongPassword) {
			t.Errorf("verify %q %q: %v", c[0], c[1], err)
		}
	}
	entries, err := s.Audit(ctx, store.AuditQuery{})
	if err != nil || len(entries) != 1 || entries[0].Action != "user.create" || entries[0].Target != "alice" ||
		entries[0].ActorName != "root" || entries[0].ActorKey != "k" || !strings.Contains(string(entries[0].Detail), `"via":"api"`) ||
		strings.Contains(string(entries[0].Detail), "password1") {
		t.Fatalf("audit: %+v %v", entries, err)
	}
}

// TestDisableStopsKeysAtOnce: a disabled person's key is refused by the keyring at once, and
// their password too; enabling brings both back. A person's role decides whether the key is
// an admin key.
func TestDisableStopsKeysAtOnce(t *testing.T) {
	s, keys, _ := newTest(t)
	ctx := context.Background()
	if _, err := s.Create(ctx, CLI, NewPerson{Name: "root", Password: "password0", Role: RoleAdmin}); err != nil {
		t.Fatal(err)
	}
	bob, err := s.Create(ctx, CLI, NewPerson{Name: "bob", Password: "password1"})
	if err != nil {
		t.Fatal(err)
	}
	key, info, err := keys.Create(ctx, auth.NewKey{Name: "bobs", Person: "bob"})
	if err != nil || !strings.HasPrefix(key, auth.PersonKeyPrefix) || len(key) != len(auth.PersonKeyPrefix)+48 ||
		info.Person == nil || info.Person.ID != bob.ID || info.Admin {
		t.Fatalf("key: %q %+v %v", key, info, err)
	}
	id, ok := keys.Authenticate(key)
	if !ok || id.Person == nil || id.Person.Name != "bob" || id.Person.Role != "member" || id.Admin {
		t.Fatalf("identity: %+v %v", id, ok)
	}
	if _, err := s.Disable(ctx, CLI, "bob"); err != nil {
		t.Fatal(err)
	}
	if _, ok := keys.Authenticate(key); ok {
		t.Fatal("a disabled person's key still works")
	}
	if _, err := s.Verify(ctx, "bob", "password1"); !errors.Is(err, ErrDisabled) {
		t.Fatalf("disabled person's password: %v", err)
	}
	if _, err := s.Verify(ctx, "bob", "wrong-password"); !errors.Is(err, ErrWrongPassword) {
		t.Fatalf("disabled person, wrong password: %v", err)
	}
	if _, _, err := keys.Create(ctx, auth.NewKey{Name: "bobs2", Person: "bob"}); !errors.Is(err, auth.ErrInvalidKey) {
		t.Fatalf("key for a disabled person: %v", err)
	}
	if _, err := s.Enable(ctx, CLI, bob.ID); err != nil {
		t.Fatal(err)
	}
	admin := RoleAdmin
	if _, err := s.Update(ctx, CLI, "bob", Change{Role: &admin}); err != nil {
		t.Fatal(err)
	}
	if id, ok := keys.Authenticate(key); !ok || !id.Admin || id.Person.Role != "admin" {
		t.Fatalf("after enable and promotion: %+v %v", id, ok)
	}
	list, err := keys.List(ctx, false)
	if err != nil || len(list) != 1 || list[0].Person == nil || list[0].Person.Name != "bob" {
		t.Fatalf("key list: %+v %v", list, err)
	}
	var actions []string
	entries, _ := s.Audit(ctx, store.AuditQuery{})
	for _, e := range entries {
		actions = append(actions, e.Action)
	}
	if got := strings.Join(actions, " "); got != "user.role user.enable user.disable user.create user.create" {
		t.Fatalf("audit actions: %s", got)
	}
}

// TestUpdate: bad changes, the last admin, password change.
func TestUpdate(t *testing.T) {
	s, _, _ := newTest(t)
	ctx := context.Background()
	if _, err := s.Create(ctx, CLI, NewPerson{Name: "root", Password: "password0", Role: RoleAdmin}); err != nil {
		t.Fatal(err)
	}
	owner, gone, empty, short := Role("owner"), State("gone"), Role(""), "short"
	for name, ch := range map[string]Change{"unknown role": {Role: &owner}, "empty role": {Role: &empty}, "unknown state": {State: &gone},
		"short password": {Password: &short}} {
		if _, err := s.Update(ctx, CLI, "root", ch); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := s.Disable(ctx, CLI, "root"); !errors.Is(err, ErrLastAdmin) {
		t.Fatalf("disable the last admin: %v", err)
	}
	member := RoleMember
	if _, err := s.Update(ctx, CLI, "root", Change{Role: &member}); !errors.Is(err, ErrLastAdmin) {
		t.Fatalf("demote the last admin: %v", err)
	}
	if _, err := s.Disable(ctx, CLI, "nobody"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown: %v", err)
	}
	if _, err := s.SetPassword(ctx, CLI, "root", "password9"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Verify(ctx, "root", "password0"); !errors.Is(err, ErrWrongPassword) {
		t.Fatalf("old password: %v", err)
	}
	if _, err := s.Verify(ctx, "root", "password9"); err != nil {
		t.Fatalf("new password: %v", err)
	}
}

// TestEnsureFirstAdmin: a generated password, then nothing on the next start; a password file.
func TestEnsureFirstAdmin(t *testing.T) {
	s, _, _ := newTest(t)
	ctx := context.Background()
	p, pw, created, err := s.EnsureFirstAdmin(ctx, "")
	if err != nil || !created || p.Name != FirstAdminName || p.Role != RoleAdmin || len(pw) != 24 {
		t.Fatalf("first: %+v %q %v %v", p, pw, created, err)
	}
	if _, err := s.Verify(ctx, "admin", pw); err != nil {
		t.Fatal(err)
	}
	if _, pw2, created, err := s.EnsureFirstAdmin(ctx, ""); err != nil || created || pw2 != "" {
		t.Fatalf("second start: %q %v %v", pw2, created, err)
	}

	s2, _, _ := newTest(t)
	file := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(file, []byte("short\n"), 0o600)
	if _, _, _, err := s2.EnsureFirstAdmin(ctx, file); !errors.Is(err, ErrInvalid) {
		t.Fatalf("short file password: %v", err)
	}
	if _, _, _, err := s2.EnsureFirstAdmin(ctx, file+".missing"); err == nil {
		t.Fatal("a missing file was accepted")
	}
	os.WriteFile(file, []byte("from the file\r\n"), 0o600)
	if _, pw, created, err := s2.EnsureFirstAdmin(ctx, file); err != nil || !created || pw != "" {
		t.Fatalf("file: %q %v %v", pw, created, err)
	}
	if _, err := s2.Verify(ctx, "admin", "from the file"); err != nil {
		t.Fatal(err)
	}
}

// TestDisableReachesAnotherProcess: a keyring on another handle of the same database (another
// process: superfluid serve while superfluid users disable runs) refuses the key from its next
// reread.
func TestDisableReachesAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	open := func() *store.Store {
		st, err := store.Open(filepath.Join(dir, "superfluid.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	cliStore, serveStore := open(), open()
	cli := New(Config{Store: cliStore, Hash: fastHash}) // the CLI reloads no keyring
	if _, err := cli.Create(ctx, CLI, NewPerson{Name: "bob", Password: "password1"}); err != nil {
		t.Fatal(err)
	}
	cliKeys, err := auth.New(ctx, auth.Config{Store: cliStore})
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := cliKeys.Create(ctx, auth.NewKey{Name: "bobs", Person: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	served, err := auth.New(ctx, auth.Config{Store: serveStore})
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := served.Authenticate(key); !ok || id.Person == nil || id.Person.Name != "bob" {
		t.Fatalf("before: %+v %v", id, ok)
	}
	if _, err := cli.Disable(ctx, CLI, "bob"); err != nil {
		t.Fatal(err)
	}
	if err := served.Reload(ctx); err != nil { // what the started keyring's timer does
		t.Fatal(err)
	}
	if _, ok := served.Authenticate(key); ok {
		t.Fatal("another process's keyring still takes a disabled person's key after its reread")
	}
}
