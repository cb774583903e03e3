package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/server/core/qos"
	"github.com/superfluid/superfluid/server/store"
)

func TestMatchOrigin(t *testing.T) {
	cases := []struct {
		pattern, origin string
		want            bool
	}{
		{"http://localhost", "http://localhost", true},
		{"http://localhost", "http://LOCALHOST", true},
		{"http://localhost", "http://localhost:3000", false},
		{"http://localhost:*", "http://localhost:3000", true},
		{"http://localhost:*", "http://localhost:", false},
		{"http://localhost:*", "http://localhost:3000.evil.example", false},
		{"http://localhost:*", "http://localhost.evil.example:3000", false},
		{"http://[::1]:*", "http://[::1]:8080", true},
		{"https://*.example.com", "https://app.example.com", true},
		{"https://*.example.com", "https://a.b.example.com", true},
		{"https://*.example.com", "https://example.com", false},
		{"https://*.example.com", "https://evil.com/.example.com", false},
		{"https://*.example.com", "http://app.example.com", false},
		{"vscode-webview://*", "vscode-webview://1abc-2", true},
		{"*", "https://anything.example", true},
		{"*", "null", true},
		{"http://localhost:*", "null", false},
		{"*", "", false},
	}
	for _, c := range cases {
		if got := MatchOrigin(c.pattern, c.origin); got != c.want {
			t.Errorf("MatchOrigin(%q, %q) = %v", c.pattern, c.origin, got)
		}
	}
	for _, o := range []string{"http://localhost:8453", "https://127.0.0.1", "http://[::1]:3000"} {
		if !slices.ContainsFunc(DefaultOrigins, func(p string) bool { return MatchOrigin(p, o) }) {
			t.Errorf("default origins refuse %s", o)
		}
	}
	for _, o := range []string{"http://evil.example", "http://localhost.evil.example", "null", "http://127.0.0.2"} {
		if slices.ContainsFunc(DefaultOrigins, func(p string) bool { return MatchOrigin(p, o) }) {
			t.Errorf("default origins allow %s", o)
		}
	}
}

func TestCheckOrigin(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"https://app.example.com/", "https://app.example.com", true},
		{"http://localhost:*", "http://localhost:*", true},
		{"*", "*", true},
		{"app.example.com", "", false},
		{"https://app.example.com/path", "", false},
		{"https://*.*.example.com", "", false},
		{"https://user@app.example.com", "", false},
		{"://x", "", false},
	}
	for _, c := range cases {
		got, err := CheckOrigin(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("CheckOrigin(%q) = %q, %v", c.in, got, err)
		}
	}
}

func TestAllowsQoS(t *testing.T) {
	agent := &Identity{QoS: qos.Agent}
	cases := []struct {
		id   *Identity
		q    qos.Class
		want bool
	}{
		{nil, qos.Interactive, true},
		{&Identity{}, qos.Interactive, true},
		{agent, qos.Background, true},
		{agent, qos.Agent, true},
		{agent, qos.Completion, false},
		{agent, qos.Interactive, false},
	}
	for _, c := range cases {
		if got := c.id.AllowsQoS(c.q); got != c.want {
			t.Errorf("%+v AllowsQoS(%v) = %v", c.id, c.q, got)
		}
	}
}

func TestIdentityScopes(t *testing.T) {
	var open *Identity
	scoped := &Identity{Models: []string{"a"}, Origins: []string{"https://app.example"}}
	cases := []struct {
		name string
		got  bool
		want bool
	}{
		{"no keys: every model", open.AllowsModel("x"), true},
		{"no keys: every origin", open.AllowsOrigin("https://evil.example"), true},
		{"no models listed: every model", (&Identity{}).AllowsModel("x"), true},
		{"listed model", scoped.AllowsModel("a"), true},
		{"other model", scoped.AllowsModel("b"), false},
		{"listed origin", scoped.AllowsOrigin("https://app.example"), true},
		{"other origin", scoped.AllowsOrigin("https://evil.example"), false},
		{"not a browser", scoped.AllowsOrigin(""), true},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %v", c.name, c.got)
		}
	}
	ctx := context.Background()
	if id, ok := FromContext(ctx); ok || id != nil {
		t.Fatalf("empty context: %v %v", id, ok)
	}
	if id, ok := FromContext(NewContext(ctx, scoped)); !ok || id != scoped {
		t.Fatalf("context: %v %v", id, ok)
	}
}

func TestParsePolicy(t *testing.T) {
	sum := sha256.Sum256([]byte("sk-sf-hashed"))
	good := `{"keys": [
		{"name": "alice", "key": "sk-sf-alice", "admin": true},
		{"name": "ci", "key_sha256": "` + hex.EncodeToString(sum[:]) + `", "models": ["m1", " m1 ", "m2"], "qos": "background",
		 "rpm": 60, "tpm": 1000, "concurrency": 2, "origins": ["https://ci.example/"]}]}`
	keys, err := ParsePolicy([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	alice, ci := keys[0], keys[1]
	if alice.Identity.ID != "policy:alice" || !alice.Identity.Admin || alice.Hash != Hash("sk-sf-alice") || alice.Identity.Source != SourcePolicy {
		t.Fatalf("alice %+v", alice)
	}
	if ci.Hash != sum || ci.Identity.Admin || !slices.Equal(ci.Identity.Models, []string{"m1", "m2"}) || ci.Identity.QoS != qos.Background ||
		ci.Identity.Limits != (Limits{RPM: 60, TPM: 1000, Concurrency: 2}) || !slices.Equal(ci.Identity.Origins, []string{"https://ci.example"}) {
		t.Fatalf("ci %+v", ci)
	}

	bad := []struct{ name, json, want string }{
		{"not JSON", `keys: []`, "not a key policy"},
		{"no keys", `{"keys": []}`, "no keys"},
		{"misspelt field", `{"keys": [{"name": "a", "key": "k", "rmp": 5}]}`, "unknown field"},
		{"no key", `{"keys": [{"name": "a"}]}`, "either"},
		{"both", `{"keys": [{"name": "a", "key": "k", "key_sha256": "` + hex.EncodeToString(sum[:]) + `"}]}`, "either"},
		{"short hash", `{"keys": [{"name": "a", "key_sha256": "abcd"}]}`, "64 hex"},
		{"no name", `{"keys": [{"key": "k"}]}`, "1 to 64"},
		{"bad name", `{"keys": [{"name": "a b", "key": "k"}]}`, "letters"},
		{"duplicate name", `{"keys": [{"name": "a", "key": "k1"}, {"name": "a", "key": "k2"}]}`, "two keys"},
		{"duplicate key", `{"keys": [{"name": "a", "key": "k1"}, {"name": "b", "key": "k1"}]}`, "same key"},
		{"space in key", `{"keys": [{"name": "a", "key": "k 1"}]}`, "printable"},
		{"bad qos", `{"keys": [{"name": "a", "key": "k", "qos": "urgent"}]}`, "QoS"},
		{"negative limit", `{"keys": [{"name": "a", "key": "k", "rpm": -1}]}`, "rpm"},
		{"bad origin", `{"keys": [{"name": "a", "key": "k", "origins": ["example.com"]}]}`, "scheme://"},
		{"empty model", `{"keys": [{"name": "a", "key": "k", "models": [""]}]}`, "empty model"},
		{"trailing text", `{"keys": [{"name": "a", "key": "k"}]} {}`, "after"},
	}
	for _, c := range bad {
		if _, err := ParsePolicy([]byte(c.json)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "db.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestKeyring(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	flag, err := APIKey("let-me-in")
	if err != nil {
		t.Fatal(err)
	}
	k, err := New(ctx, Config{Keys: []Key{flag}, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if !k.Enabled() || k.Size() != 1 {
		t.Fatalf("enabled %v size %d", k.Enabled(), k.Size())
	}
	if id, ok := k.Authenticate("let-me-in"); !ok || id.ID != "api-key" || !id.Admin {
		t.Fatalf("flag key: %+v %v", id, ok)
	}

	key, info, err := k.Create(ctx, NewKey{Name: "bob", Models: []string{"m"}, QoS: qos.Agent, Limits: Limits{RPM: 5}, Origins: []string{"https://bob.example"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(key, KeyPrefix) || len(key) != len(KeyPrefix)+48 || !strings.HasPrefix(key, info.Prefix) || !strings.HasPrefix(info.ID, "key-") {
		t.Fatalf("key %q info %+v", key, info)
	}
	id, ok := k.Authenticate(key)
	if !ok || id.Name != "bob" || id.Admin || id.QoS != qos.Agent || id.Limits.RPM != 5 || id.Source != SourceStore || !id.AllowsModel("m") || id.AllowsModel("n") {
		t.Fatalf("stored key: %+v %v", id, ok)
	}
	if !k.KeyOrigin("https://bob.example") || k.KeyOrigin("https://eve.example") {
		t.Fatal("key origins")
	}

	// Nothing in the database is the key: only its hash.
	rows, _ := st.Keys(ctx, true)
	if len(rows) != 1 || rows[0].Hash != Hash(key) || strings.Contains(rows[0].Prefix, key[len(info.Prefix):]) {
		t.Fatalf("stored %+v", rows)
	}

	createErrs := []struct {
		name string
		nk   NewKey
		want error
	}{
		{"taken", NewKey{Name: "bob"}, ErrKeyExists},
		{"configured name", NewKey{Name: "api-key"}, ErrKeyExists},
		{"id-like name", NewKey{Name: "key-1"}, ErrInvalidKey},
		{"empty name", NewKey{Name: " "}, ErrInvalidKey},
		{"negative limit", NewKey{Name: "x", Limits: Limits{TPM: -1}}, ErrInvalidKey},
		{"bad origin", NewKey{Name: "x", Origins: []string{"nope"}}, ErrInvalidKey},
	}
	for _, c := range createErrs {
		if _, _, err := k.Create(ctx, c.nk); !errors.Is(err, c.want) {
			t.Errorf("create %s: %v", c.name, err)
		}
	}

	// A second keyring on the same database (another process) sees the key after a reload.
	other, err := New(ctx, Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := other.Authenticate(key); !ok {
		t.Fatal("another keyring does not know the key")
	}

	list, err := k.List(ctx, false)
	if err != nil || len(list) != 2 || list[0].Source != SourceFlag || list[1].Name != "bob" {
		t.Fatalf("list %+v %v", list, err)
	}
	if _, err := k.Revoke(ctx, "api-key"); !errors.Is(err, ErrConfiguredKey) || !strings.Contains(err.Error(), "--api-key") {
		t.Fatalf("revoke the flag's key: %v", err)
	}
	if _, err := k.Revoke(ctx, "nobody"); !errors.Is(err, ErrKeyNotFound) {
		t.Fatalf("revoke unknown: %v", err)
	}
	rev, err := k.Revoke(ctx, info.ID)
	if err != nil || rev.RevokedAt.IsZero() {
		t.Fatalf("revoke: %+v %v", rev, err)
	}
	if _, ok := k.Authenticate(key); ok {
		t.Fatal("a revoked key still works")
	}
	if err := other.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := other.Authenticate(key); ok || other.Enabled() {
		t.Fatal("the other keyring still takes the revoked key")
	}
	all, _ := k.List(ctx, true)
	if len(all) != 2 || all[1].RevokedAt.IsZero() {
		t.Fatalf("list with revoked %+v", all)
	}
	other.SetRequired(true)
	if !other.Enabled() {
		t.Fatal("required keys not enabled")
	}
}

// TestUnknownKeysLeaveNothing: a thousand random keys are refused and the keyring holds what
// it held before.
func TestUnknownKeysLeaveNothing(t *testing.T) {
	ctx := context.Background()
	k, err := New(ctx, Config{Store: openStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := k.Create(ctx, NewKey{Name: "only"}); err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		if _, ok := k.Authenticate(Generate()); ok {
			t.Fatal("a random key was accepted")
		}
	}
	if k.Size() != 1 {
		t.Fatalf("the keyring holds %d identities after 1000 unknown keys", k.Size())
	}
}

func TestAPIKey(t *testing.T) {
	for _, bad := range []string{"", "two words", "tab\there", "caf\u00e9"} {
		if _, err := APIKey(bad); err == nil {
			t.Errorf("APIKey(%q) accepted", bad)
		}
	}
	if k, err := New(context.Background(), Config{}); err != nil || k.Enabled() {
		t.Fatalf("no keys: enabled %v, %v", k.Enabled(), err)
	}
	a, _ := APIKey("same")
	b, _ := APIKey("same")
	b.Identity.Name = "b"
	if _, err := New(context.Background(), Config{Keys: []Key{a, b}}); err == nil {
		t.Fatal("the same key configured twice")
	}
}

// eventually polls cond until it holds, failing after a generous deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStartedKeyringRereads: a started keyring takes the keys another process (its own
// connection to the same database) creates and revokes on its own timer, with no request to
// prompt it: a server with no keys turns them on, and a revoked key is refused once a reread
// that began after the revocation is done. Close ends the timer.
func TestStartedKeyringRereads(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "db.sqlite")
	open := func() *store.Store {
		st, err := store.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	serverStore, cliStore := open(), open()
	before := runtime.NumGoroutine()
	server, err := New(ctx, Config{Store: serverStore, Refresh: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	server.Start()
	server.Start() // a second Start starts nothing more
	defer server.Close()
	cli, err := New(ctx, Config{Store: cliStore})
	if err != nil {
		t.Fatal(err)
	}
	if server.Enabled() {
		t.Fatal("keys on before any key exists")
	}
	key, _, err := cli.Create(ctx, NewKey{Name: "admin", Admin: true})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the server's keyring turns keys on", server.Enabled) // Enabled alone, no Authenticate
	if id, ok := server.Authenticate(key); !ok || !id.Admin {
		t.Fatalf("the new key: %+v %v", id, ok)
	}
	if _, err := cli.Revoke(ctx, "admin"); err != nil {
		t.Fatal(err)
	}
	// The reread under way may have read before the revocation; the one after it has not.
	n := server.Reloads()
	eventually(t, "two rereads after the revocation", func() bool { return server.Reloads() >= n+2 })
	if _, ok := server.Authenticate(key); ok {
		t.Fatal("a key revoked by another process still works after the next reread")
	}
	server.Close()
	server.Close() // twice is fine
	eventually(t, "the refresh goroutine ends", func() bool { return runtime.NumGoroutine() <= before })
}
