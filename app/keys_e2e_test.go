package app

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/servertest"
)

// cli runs the command line in process and returns its exit code, stdout and stderr.
func cli(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := Main(append([]string{"superfluid"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func keyClient(url, key string) *openai.Client {
	c := openai.NewClient(option.WithBaseURL(url+"/v1"), option.WithAPIKey(key), option.WithMaxRetries(0))
	return &c
}

// TestKeysCommand: superfluid keys create, list and revoke on a data directory, and a server
// on that directory taking the keys, including one revoked while it runs.
func TestKeysCommand(t *testing.T) {
	data := t.TempDir()
	ctx := context.Background()
	if code, out, _ := cli("keys", "list", "--data-dir", data); code != 0 || !strings.Contains(out, "no API keys") {
		t.Fatalf("empty list: %d %q", code, out)
	}
	code, alice, errOut := cli("keys", "create", "alice", "--admin", "--data-dir", data)
	alice = strings.TrimSpace(alice)
	if code != 0 || !strings.HasPrefix(alice, auth.KeyPrefix) || strings.Count(alice, "\n") != 0 || !strings.Contains(errOut, "not shown again") {
		t.Fatalf("create alice: %d %q %q", code, alice, errOut)
	}
	code, bob, _ := cli("keys", "create", "--data-dir", data, "bob", "--models", "stories260K,other", "--qos", "agent", "--rpm", "60")
	bob = strings.TrimSpace(bob)
	if code != 0 || !strings.HasPrefix(bob, auth.KeyPrefix) {
		t.Fatalf("create bob: %d %q", code, bob)
	}
	refused := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"taken name", []string{"keys", "create", "bob"}, 2, "exists"},
		{"bad name", []string{"keys", "create", "two words"}, 2, "letters, digits"},
		{"bad qos", []string{"keys", "create", "x", "--qos", "urgent"}, 2, "--qos"},
		{"no name", []string{"keys", "create"}, 2, "name the key"},
		{"unknown subcommand", []string{"keys", "rotate"}, 2, `unknown keys command "rotate"`},
		{"revoke unknown", []string{"keys", "revoke", "carol"}, 2, "no active key"},
		{"revoke nothing", []string{"keys", "revoke"}, 2, "name the key to revoke"},
	}
	for _, c := range refused {
		code, _, errOut := cli(append(c.args, "--data-dir", data)...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, stderr %q", c.name, code, errOut)
		}
	}
	code, list, _ := cli("keys", "list", "--data-dir", data)
	if code != 0 || !strings.Contains(list, "alice") || !strings.Contains(list, "stories260K,other") || !strings.Contains(list, "agent") ||
		!strings.Contains(list, alice[:len(auth.KeyPrefix)+6]+"…") || strings.Contains(list, alice) || strings.Contains(list, bob) {
		t.Fatalf("list:\n%s", list)
	}

	// A server on the directory needs a key now.
	cfg := testConfig(t, "")
	cfg.DataDir = data
	a, srv := startServer(t, cfg, false)
	var e *openai.Error
	if _, err := keyClient(srv.URL, "").Models.List(ctx); !errors.As(err, &e) || e.StatusCode != 401 {
		t.Fatalf("no key: %v", err)
	}
	page, err := keyClient(srv.URL, bob).Models.List(ctx)
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != "stories260K" {
		t.Fatalf("bob's models: %+v %v", page, err)
	}
	if err := keyClient(srv.URL, bob).Post(ctx, "models/unload", map[string]any{"model": "stories260K"}, nil); !errors.As(err, &e) || e.StatusCode != 403 {
		t.Fatalf("bob unloads: %v", err)
	}
	if err := keyClient(srv.URL, alice).Post(ctx, "models/unload", map[string]any{"model": "stories260K"}, nil); err != nil {
		t.Fatalf("alice unloads: %v", err)
	}

	// Revoked from another process while the server runs: the server rereads its keys every
	// few seconds (here at once).
	if code, out, errOut := cli("keys", "revoke", "bob", "--data-dir", data); code != 0 || !strings.Contains(out, "revoked bob") {
		t.Fatalf("revoke: %d %q %q", code, out, errOut)
	}
	if err := a.Keys().Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := keyClient(srv.URL, bob).Models.List(ctx); !errors.As(err, &e) || e.StatusCode != 401 {
		t.Fatalf("revoked key: %v", err)
	}
	if _, err := keyClient(srv.URL, alice).Models.List(ctx); err != nil {
		t.Fatalf("alice after bob's revocation: %v", err)
	}
	code, list, _ = cli("keys", "list", "--all", "--data-dir", data)
	if code != 0 || !strings.Contains(list, "REVOKED") || strings.Count(list, "\n") != 3 {
		t.Fatalf("list --all:\n%s", list)
	}
	if code, _, _ := cli("keys", "revoke", "bob", "--data-dir", data); code != 2 {
		t.Fatalf("revoke twice: exit %d", code)
	}
}

// server is a `superfluid serve` process.
type serveProcess struct {
	cmd  *exec.Cmd
	url  string
	mu   sync.Mutex
	log  bytes.Buffer
	done chan struct{}
}

// startServe runs superfluid serve with args in a process and waits for its address.
func startServe(t *testing.T, args ...string) *serveProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"serve", "--port", "0", "--data-dir", t.TempDir()}, args...)...)
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProcess{cmd: cmd, done: make(chan struct{})}
	t.Cleanup(func() { cmd.Process.Kill(); <-p.done })
	addr := make(chan string, 1)
	go func() {
		defer close(p.done)
		port := regexp.MustCompile(`serving .* on http://\S*:(\d+) `)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if m := port.FindStringSubmatch(sc.Text()); m != nil {
				addr <- "http://127.0.0.1:" + m[1]
			}
		}
		cmd.Wait()
	}()
	select {
	case p.url = <-addr:
	case <-p.done:
		t.Fatalf("serve %v exited:\n%s", args, p.output())
	case <-time.After(time.Minute):
		t.Fatalf("serve %v never served:\n%s", args, p.output())
	}
	return p
}

func (p *serveProcess) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// stop sends SIGTERM and returns the exit code.
func (p *serveProcess) stop(t *testing.T) int {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.done
	return p.cmd.ProcessState.ExitCode()
}

// TestServeOnTheNetworkNeedsAKey: serve and the desktop app (without a display) refuse a
// non-loopback address without any key, naming the three ways out; --insecure-open serves
// there without keys (with a warning), and --api-key or --key-policy serve there with them.
func TestServeOnTheNetworkNeedsAKey(t *testing.T) {
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	for _, args := range [][]string{
		{"serve", "--host", "0.0.0.0", "--port", "0", "--data-dir", t.TempDir()},
		{"serve", "--host", "::", "--port", "0", "--data-dir", t.TempDir()},
		{"--host", "0.0.0.0", "--port", "0", "--data-dir", t.TempDir()},
	} {
		code, _, errOut := cli(args...)
		if code != 2 || (args[0] == "serve" && strings.Count(strings.TrimSpace(errOut), "\n") != 0) {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
		for _, w := range []string{"refusing to serve", "--api-key", "--key-policy", "--insecure-open"} {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr %q lacks %q", args, errOut, w)
			}
		}
	}
	policy := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(policy, []byte(`{"keys": [{"name": "team", "key": "sk-sf-team-key"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"keys": [{"name": "team", "key": "k", "rmp": 1}]}`), 0o600)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"unreadable policy", []string{"--key-policy", filepath.Join(t.TempDir(), "none.json")}, "--key-policy"},
		{"bad policy", []string{"--key-policy", bad}, `unknown field "rmp"`},
		{"bad api key", []string{"--api-key", "two words"}, "--api-key"},
		{"bad origin", []string{"--cors-origins", "example.com"}, "scheme://"},
	} {
		code, _, errOut := cli(append([]string{"serve", "--port", "0", "--data-dir", t.TempDir()}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, stderr %q", c.name, code, errOut)
		}
	}

	ctx := context.Background()
	open := startServe(t, "--host", "0.0.0.0", "--insecure-open")
	if !strings.Contains(open.output(), "WARNING") {
		t.Errorf("--insecure-open without a warning:\n%s", open.output())
	}
	if _, err := keyClient(open.url, "").Models.List(ctx); err != nil {
		t.Fatalf("--insecure-open: %v", err)
	}
	// Not loopback-bound: no Host check; a LAN name reaches it.
	if res, body := withHost(t, open.url+"/health", "myserver.lan"); res.StatusCode != 200 {
		t.Fatalf("health with a LAN Host: %d %s", res.StatusCode, body)
	}
	if code := open.stop(t); code != 0 {
		t.Fatalf("--insecure-open server exit %d:\n%s", code, open.output())
	}

	for _, c := range []struct {
		args []string
		key  string
	}{
		{[]string{"--host", "0.0.0.0", "--api-key", "sk-sf-flag-key"}, "sk-sf-flag-key"},
		{[]string{"--host", "0.0.0.0", "--key-policy", policy}, "sk-sf-team-key"},
	} {
		p := startServe(t, c.args...)
		if !strings.Contains(p.output(), "requests need an API key") {
			t.Errorf("%v: no word on keys:\n%s", c.args, p.output())
		}
		var e *openai.Error
		if _, err := keyClient(p.url, "").Models.List(ctx); !errors.As(err, &e) || e.StatusCode != 401 {
			t.Errorf("%v without a key: %v", c.args, err)
		}
		if _, err := keyClient(p.url, c.key).Models.List(ctx); err != nil {
			t.Errorf("%v with the key: %v", c.args, err)
		}
		if res, _ := servertest.Do(t, "GET", p.url+"/health", ""); res.StatusCode != 200 {
			t.Errorf("%v: /health needs a key: %d", c.args, res.StatusCode)
		}
		p.stop(t)
	}
}

// withHost GETs url with another Host header.
func withHost(t *testing.T, url, host string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	return servertest.Send(t, req)
}

// TestLoopbackServeStaysOpen: with no key and a loopback address everything is open as
// before, but a foreign Host or origin is refused.
func TestLoopbackServeStaysOpen(t *testing.T) {
	_, srv := startServer(t, testConfig(t, ""), false)
	if _, err := keyClient(srv.URL, "anything").Models.List(context.Background()); err != nil {
		t.Fatalf("open server: %v", err)
	}
	if res, body := withHost(t, srv.URL+"/v1/models", "attacker.example"); res.StatusCode != 403 {
		t.Fatalf("foreign Host: %d %s", res.StatusCode, body)
	}
	res, _ := servertest.Do(t, "OPTIONS", srv.URL+"/v1/chat/completions", "", "Origin", "https://attacker.example", "Access-Control-Request-Method", "POST")
	if res.StatusCode != 403 || res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("foreign preflight: %d %v", res.StatusCode, res.Header)
	}
}

// keysProcess runs `superfluid keys ARGS...` as a process of its own (this test binary, as the
// command line) and returns its standard output.
func keysProcess(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"keys"}, args...)...)
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("superfluid keys %v: %v\n%s", args, err, stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

// eventually polls cond until it holds, failing after a generous deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // generous: a pass never waits this long
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// status is the HTTP status of err from openai-go (200 for none).
func status(err error) int {
	var e *openai.Error
	if errors.As(err, &e) {
		return e.StatusCode
	}
	if err != nil {
		return -1
	}
	return http.StatusOK
}

// TestKeysFromAnotherProcessReachServe: two processes on one data directory, a running
// `superfluid serve` with no keys and the `superfluid keys` command line. A key created from
// the command line turns keys on in the server by itself (no request prompts it), and a key
// revoked there is refused by the first request that comes after the server's next reread,
// however long the key was idle.
func TestKeysFromAnotherProcessReachServe(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	p := startServe(t, "--data-dir", data)
	if _, err := keyClient(p.url, "").Models.List(ctx); err != nil {
		t.Fatalf("a server with no keys: %v", err)
	}

	admin := keysProcess(t, "create", "admin", "--admin", "--data-dir", data)
	eventually(t, "the server needs a key after superfluid keys create", func() bool {
		_, err := keyClient(p.url, "").Models.List(ctx) // keyless: nothing here asks the server to reread
		return status(err) == http.StatusUnauthorized
	})
	if _, err := keyClient(p.url, admin).Models.List(ctx); err != nil {
		t.Fatalf("the created admin key: %v", err)
	}

	user := keysProcess(t, "create", "user", "--data-dir", data)
	eventually(t, "the server takes a second key", func() bool {
		_, err := keyClient(p.url, user).Models.List(ctx)
		return err == nil
	})
	keysProcess(t, "revoke", "user", "--data-dir", data)
	// A marker key created after the revocation names an origin, which CORS preflights (no key
	// needed, no key presented) answer once the server has reread the keys: a reread that saw
	// the marker saw the revocation before it. The revoked key stays idle until then.
	keysProcess(t, "create", "marker", "--origins", "https://marker.example", "--data-dir", data)
	eventually(t, "the server rereads the keys on its own", func() bool {
		res, _ := servertest.Do(t, "OPTIONS", p.url+"/v1/models", "", "Origin", "https://marker.example", "Access-Control-Request-Method", "GET")
		return res.StatusCode == http.StatusNoContent
	})
	if _, err := keyClient(p.url, user).Models.List(ctx); status(err) != http.StatusUnauthorized {
		t.Fatalf("the first request with a key revoked by another process: %v", err)
	}
	if _, err := keyClient(p.url, admin).Models.List(ctx); err != nil {
		t.Fatalf("the admin key after the revocation: %v", err)
	}
	if code := p.stop(t); code != 0 {
		t.Fatalf("serve exited %d:\n%s", code, p.output())
	}
}

// refreshing reports whether a goroutine of the keyring's reread loop is alive.
func refreshing() bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Contains(string(buf[:n]), "auth.(*Keyring).refreshLoop")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// TestKeysRereadStopsWithTheApp: the server's keyring rereads on a timer of its own, and
// App.Close ends it.
func TestKeysRereadStopsWithTheApp(t *testing.T) {
	if refreshing() {
		t.Fatal("a keyring's reread loop runs before the app starts (left by another test)")
	}
	a, err := New(testConfig(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			a.Close()
		}
	}()
	eventually(t, "the server's keyring rereads on its own", refreshing) // its goroutine may not be listed before it first runs
	closed = true
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the reread loop ends with the app", func() bool { return !refreshing() })
}
