package app

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/store"
)

// TestUsersCommand: superfluid users add, list, disable, enable and passwd through the cobra
// command on a data directory, keys create --user, and a team server on that directory that
// refuses a disabled person's key: from another process within the reread (here a Reload), in
// its own process at once.
func TestUsersCommand(t *testing.T) {
	data, ctx := t.TempDir(), context.Background()
	if code, out, _ := cli("users", "list", "--data-dir", data); code != 0 || !strings.Contains(out, "nobody yet") {
		t.Fatalf("empty list: %d %q", code, out)
	}
	code, alicePW, errOut := cli("users", "add", "alice", "--admin", "--data-dir", data)
	alicePW = strings.TrimSpace(alicePW)
	if code != 0 || len(alicePW) != 24 || !strings.Contains(errOut, "added admin alice") {
		t.Fatalf("add alice: %d %q %q", code, alicePW, errOut)
	}
	pwFile, shortFile := filepath.Join(t.TempDir(), "pw"), filepath.Join(t.TempDir(), "short")
	os.WriteFile(pwFile, []byte("bobs password\n"), 0o600)
	os.WriteFile(shortFile, []byte("short\n"), 0o600)
	if code, out, errOut := cli("users", "add", "bob", "--password-file", pwFile, "--data-dir", data); code != 0 || out != "" {
		t.Fatalf("add bob: %d %q %q", code, out, errOut)
	}
	refused := []struct {
		name string
		args []string
		want string
	}{
		{"duplicate", []string{"users", "add", "Alice"}, "exists"},
		{"short password", []string{"users", "add", "carol", "--password-file", shortFile}, "at least 8"},
		{"empty password", []string{"users", "add", "carol", "--password-file", os.DevNull}, "empty"},
		{"missing file", []string{"users", "add", "carol", "--password-file", pwFile + ".none"}, "password file"},
		{"bad name", []string{"users", "add", "two words"}, "letters, digits"},
		{"no name", []string{"users", "add"}, "name the person"},
		{"unknown subcommand", []string{"users", "rm"}, `unknown users command "rm"`},
		{"disable unknown", []string{"users", "disable", "carol"}, "nobody is named"},
		{"disable the last admin", []string{"users", "disable", "alice"}, "last active admin"},
		{"key for nobody", []string{"keys", "create", "k", "--user", "carol"}, "no person is named"},
		{"admin key for a person", []string{"keys", "create", "k", "--user", "bob", "--admin"}, "drop admin"},
	}
	for _, c := range refused {
		if code, _, errOut := cli(append(c.args, "--data-dir", data)...); code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, stderr %q", c.name, code, errOut)
		}
	}
	code, list, _ := cli("users", "list", "--data-dir", data)
	if code != 0 || !strings.Contains(list, "alice") || !strings.Contains(list, "admin") || !strings.Contains(list, "member") ||
		strings.Contains(list, alicePW) || strings.Count(list, "\n") != 3 {
		t.Fatalf("list:\n%s", list)
	}
	code, bobKey, errOut := cli("keys", "create", "bobs", "--user", "bob", "--data-dir", data)
	bobKey = strings.TrimSpace(bobKey)
	if code != 0 || !strings.HasPrefix(bobKey, auth.PersonKeyPrefix) || len(bobKey) != len(auth.PersonKeyPrefix)+48 {
		t.Fatalf("bob's key: %d %q %q", code, bobKey, errOut)
	}
	code, aliceKey, _ := cli("keys", "create", "alices", "--user", "alice", "--data-dir", data)
	aliceKey = strings.TrimSpace(aliceKey)
	if code != 0 || !strings.HasPrefix(aliceKey, auth.PersonKeyPrefix) {
		t.Fatalf("alice's key: %d %q", code, aliceKey)
	}

	if code, out, _ := cli("keys", "list", "--data-dir", data); code != 0 || !strings.Contains(out, "USER") ||
		!strings.Contains(out, auth.PersonKeyPrefix) || !strings.Contains(out, "bob") {
		t.Fatalf("keys list:\n%s", out)
	}

	cfg := testConfig(t, "")
	cfg.DataDir, cfg.Team = data, true
	a, srv := startServer(t, cfg, false)
	var e *openai.Error
	if _, err := keyClient(srv.URL, "").Models.List(ctx); !errors.As(err, &e) || e.StatusCode != 401 {
		t.Fatalf("no key in team mode: %v", err)
	}
	if _, err := keyClient(srv.URL, bobKey).Models.List(ctx); err != nil {
		t.Fatalf("bob's key: %v", err)
	}
	if err := keyClient(srv.URL, bobKey).Get(ctx, "admin/users", nil, nil); !errors.As(err, &e) || e.StatusCode != 403 {
		t.Fatalf("bob on an admin route: %v", err)
	}
	var users struct{ Data []map[string]any }
	if err := keyClient(srv.URL, aliceKey).Get(ctx, "admin/users", nil, &users); err != nil || len(users.Data) != 2 {
		t.Fatalf("alice lists users: %+v %v", users, err)
	}

	// Disabled from another process: refused from the next reread on.
	if code, out, errOut := cli("users", "disable", "bob", "--data-dir", data); code != 0 || !strings.Contains(out, "disabled bob") {
		t.Fatalf("disable: %d %q %q", code, out, errOut)
	}
	if err := a.Keys().Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := keyClient(srv.URL, bobKey).Models.List(ctx); !errors.As(err, &e) || e.StatusCode != 401 || e.Code != "invalid_api_key" {
		t.Fatalf("disabled bob's key: %v", err)
	}
	if code, out, _ := cli("users", "enable", "bob", "--data-dir", data); code != 0 || !strings.Contains(out, "enabled bob") {
		t.Fatalf("enable: %d %q", code, out)
	}
	if err := a.Keys().Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := keyClient(srv.URL, bobKey).Models.List(ctx); err != nil {
		t.Fatalf("enabled bob's key: %v", err)
	}
	// Disabled in this process: refused at once, no reread.
	if _, err := a.People().Disable(ctx, people.CLI, "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := keyClient(srv.URL, bobKey).Models.List(ctx); !errors.As(err, &e) || e.StatusCode != 401 {
		t.Fatalf("bob's key right after Disable: %v", err)
	}

	code, newPW, _ := cli("users", "passwd", "alice", "--data-dir", data)
	newPW = strings.TrimSpace(newPW)
	if code != 0 || len(newPW) != 24 || newPW == alicePW {
		t.Fatalf("passwd: %d %q", code, newPW)
	}
	if _, err := a.People().Verify(ctx, "alice", newPW); err != nil {
		t.Fatalf("the new password: %v", err)
	}
	if _, err := a.People().Verify(ctx, "alice", alicePW); !errors.Is(err, people.ErrWrongPassword) {
		t.Fatalf("the old password: %v", err)
	}
	entries, err := a.People().Audit(ctx, store.AuditQuery{})
	var actions []string
	for _, e := range entries {
		actions = append(actions, e.Action)
	}
	if err != nil || strings.Join(actions, " ") != "user.passwd user.disable user.enable user.disable key.create key.create user.create user.create" {
		t.Fatalf("audit: %v %v", actions, err)
	}
}

// TestTeamFirstAdmin: the first start of team mode creates the admin with a one-time password
// printed once; the next start creates nobody; --admin-password-file sets the password and
// needs --team.
func TestTeamFirstAdmin(t *testing.T) {
	ctx := context.Background()
	if code, out, _ := cli("serve", "--help"); code != 0 || !strings.Contains(out, "--team") || !strings.Contains(out, "--admin-password-file") {
		t.Fatalf("serve --help: %d %q", code, out)
	}
	cfg := testConfig(t, "")
	cfg.Team = true
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var note bytes.Buffer
	a.teamNote(&note)
	line, _, _ := strings.Cut(note.String(), "\n")
	i := strings.Index(line, "one-time password ")
	if i < 0 || !strings.Contains(note.String(), "--user admin") {
		t.Fatalf("note: %q", note.String())
	}
	password, _, _ := strings.Cut(line[i+len("one-time password "):], " ")
	if p, err := a.People().Verify(ctx, "admin", password); err != nil || p.Role != people.RoleAdmin {
		t.Fatalf("the printed password: %q %+v %v", password, p, err)
	}
	note.Reset()
	a.teamNote(&note)
	if note.Len() != 0 {
		t.Fatalf("the password was shown twice: %q", note.String())
	}
	a.Close()
	a, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.teamNote(&note)
	a.Close()
	if note.Len() != 0 {
		t.Fatalf("second start: %q", note.String())
	}

	file := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(file, []byte("the admin's password\n"), 0o600)
	cfg = testConfig(t, "")
	cfg.AdminPasswordFile = file
	var ue *UsageError
	if _, err := New(cfg); !errors.As(err, &ue) || !strings.Contains(err.Error(), "--team") {
		t.Fatalf("--admin-password-file without --team: %v", err)
	}
	cfg.Team = true
	a, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.People().Verify(ctx, "admin", "the admin's password"); err != nil {
		t.Fatal(err)
	}
	if a.People() == nil || !a.Keys().Enabled() {
		t.Fatal("team mode does not require keys")
	}
}

// TestServeTeamProcess: `superfluid serve --team` as its own process prints the first admin's
// one-time password once; keys made from the command line for the admin and a member work in
// it, and the member disabled from the command line is refused within the server's reread.
func TestServeTeamProcess(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	p := startServe(t, "--team", "--data-dir", data)
	m := regexp.MustCompile(`created the first admin "admin" with the one-time password (\S+) `).FindStringSubmatch(p.output())
	if m == nil {
		t.Fatalf("no one-time password in the serve output:\n%s", p.output())
	}
	if _, err := keyClient(p.url, "").Models.List(ctx); status(err) != http.StatusUnauthorized {
		t.Fatalf("team mode without a key: %v", err)
	}
	admin := keysProcess(t, "create", "admins", "--user", "admin", "--data-dir", data)
	if code, _, errOut := cli("users", "add", "bob", "--data-dir", data); code != 0 {
		t.Fatalf("add bob: %s", errOut)
	}
	bob := keysProcess(t, "create", "bobs", "--user", "bob", "--data-dir", data)
	eventually(t, "the server takes the admin's key", func() bool {
		return keyClient(p.url, admin).Get(ctx, "admin/users", nil, nil) == nil
	})
	eventually(t, "the server takes bob's key", func() bool { _, err := keyClient(p.url, bob).Models.List(ctx); return err == nil })
	if err := keyClient(p.url, bob).Get(ctx, "admin/users", nil, nil); status(err) != http.StatusForbidden {
		t.Fatalf("bob on an admin route: %v", err)
	}
	if code, _, errOut := cli("users", "disable", "bob", "--data-dir", data); code != 0 {
		t.Fatalf("disable bob: %s", errOut)
	}
	eventually(t, "the server refuses disabled bob's key", func() bool {
		_, err := keyClient(p.url, bob).Models.List(ctx)
		return status(err) == http.StatusUnauthorized
	})
	if code := p.stop(t); code != 0 {
		t.Fatalf("serve exited %d:\n%s", code, p.output())
	}
	again := startServe(t, "--team", "--data-dir", data)
	if strings.Contains(again.output(), "one-time password") {
		t.Fatalf("the second start shows a password:\n%s", again.output())
	}
	// An answer means the server runs, its signal handler in place, before the SIGTERM.
	if res, _ := servertest.Do(t, "GET", again.url+"/health", ""); res.StatusCode != http.StatusOK {
		t.Fatalf("health: %d", res.StatusCode)
	}
	if code := again.stop(t); code != 0 {
		t.Fatalf("serve exited %d:\n%s", code, again.output())
	}
}
