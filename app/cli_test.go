package app

import (
	"bufio"
	"bytes"
	"github.com/superfluid/superfluid/runtime/models/hf/hftest"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/superfluid/superfluid/server/servertest"
)

// TestServeBadModel: a bad MODEL argument is one line on stderr and exit code 2.
func TestServeBadModel(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.gguf")
	if err := os.WriteFile(text, []byte("these are not weights\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, model, want string
	}{
		{"missing file", filepath.Join(dir, "nope.gguf"), "does not exist"},
		{"directory", dir, "is a directory"},
		{"not gguf", text, "not a GGUF"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main([]string{"superfluid", "serve", "--data-dir", t.TempDir(), "--port", "0", c.model}, &stdout, &stderr)
			if code != 2 {
				t.Fatalf("exit code %d, want 2 (stderr %q)", code, stderr.String())
			}
			out := strings.TrimSpace(stderr.String())
			if strings.Count(out, "\n") != 0 || !strings.Contains(out, c.want) {
				t.Fatalf("stderr %q: want one line containing %q", out, c.want)
			}
		})
	}
}

// TestCLIHelp: --help and -h on the root and on every command, hidden ones included, print
// that command's usage on stdout and exit 0.
func TestCLIHelp(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, []string{"superfluid [command]", "serve", "bench", "desktop app", "--hidden"}},
		{[]string{"-h"}, []string{"superfluid [command]"}},
		{[]string{"help"}, []string{"superfluid [command]"}},
		{[]string{"serve", "--help"}, []string{"superfluid serve [MODEL]", "--port", "--completion-deadline-ms", "--verbose"}},
		{[]string{"serve", "model.gguf", "-h"}, []string{"superfluid serve [MODEL]"}},
		{[]string{"help", "serve"}, []string{"superfluid serve [MODEL]"}},
		{[]string{"list", "--help"}, []string{"superfluid list", "--data-dir"}},
		{[]string{"pull", "--help"}, []string{"superfluid pull REFERENCE", "hf.co/OWNER/REPO:QUANT", "--hf-endpoint"}},
		{[]string{"add", "--help"}, []string{"superfluid add PATH.gguf", "--name"}},
		{[]string{"rm", "--help"}, []string{"superfluid rm ID", "--data-dir"}},
		{[]string{"bench", "--help"}, []string{"superfluid bench MODEL.gguf", "--suite", "--write-model", "--lanes"}},
		{[]string{"worker", "--help"}, []string{"superfluid worker", "--socket", "--vocab-only"}},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		code := Main(append([]string{"superfluid"}, c.args...), &stdout, &stderr)
		if code != 0 || stderr.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 0 and nothing", c.args, code, stderr.String())
		}
		for _, w := range append(c.want, "Usage:") {
			if !strings.Contains(stdout.String(), w) {
				t.Errorf("%v: stdout lacks %q:\n%s", c.args, w, stdout.String())
			}
		}
	}
	// The root's help lists the public commands only.
	var stdout bytes.Buffer
	Main([]string{"superfluid", "--help"}, &stdout, &stdout)
	if strings.Contains(stdout.String(), "worker") {
		t.Errorf("root help shows the hidden worker command:\n%s", stdout.String())
	}
}

// TestCLIExitCodes: usage errors exit 2 with a message on stderr; runtime failures exit 1.
func TestCLIExitCodes(t *testing.T) {
	// No display: `superfluid` with no command runs the server alone (the desktop app is tested
	// in tray/ and under Xvfb by make screenshots).
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	hub := hftest.New()
	defer hub.Close()
	cases := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"no command, no display, port in use", []string{"--port", busyPort, "--data-dir", data}, 1, []string{"no display", "listen on 127.0.0.1:" + busyPort}},
		{"unknown command", []string{"frobnicate"}, 2, []string{`unknown command "frobnicate"`, `run "superfluid --help"`}},
		{"misspelt command", []string{"serv"}, 2, []string{`unknown command "serv" (did you mean "serve"?)`}},
		{"unknown flag", []string{"serve", "--nope", testModel}, 2, []string{"unknown flag: --nope", `run "superfluid serve --help"`}},
		{"unknown root flag", []string{"--nope"}, 2, []string{"unknown flag: --nope"}},
		{"bad flag value", []string{"serve", "--port", "x", "a.gguf"}, 2, []string{`invalid argument "x" for "--port"`}},
		{"bad milliseconds", []string{"serve", "--completion-deadline-ms", "-5", "a.gguf"}, 2, []string{"whole number of milliseconds"}},
		{"completion rate zero", []string{"serve", "--port", "0", "--data-dir", data, "--completion-rate", "0", "nope.gguf"}, 2,
			[]string{`"--completion-rate"`, "above 0", "--completion-burst 0"}},
		{"completion rate negative", []string{"serve", "--port", "0", "--data-dir", data, "--completion-rate=-1", "nope.gguf"}, 2, []string{"above 0"}},
		{"completion rate NaN", []string{"serve", "--port", "0", "--data-dir", data, "--completion-rate", "NaN", "nope.gguf"}, 2, []string{"above 0"}},
		{"bad trusted proxy", []string{"serve", "--port", "0", "--data-dir", data, "--trusted-proxies", "127.0.0.1,10.0.0.0/33", "nope.gguf"}, 2,
			[]string{`"10.0.0.0/33"`, "CIDR"}},
		{"serve two models", []string{"serve", "a.gguf", "b.gguf"}, 2, []string{"expected one model, got 2"}},
		{"serve missing file", []string{"serve", "--port", "0", "--data-dir", data, "nope.gguf"}, 2, []string{"nope.gguf does not exist"}},
		{"bench no model", []string{"bench", "--repeat", "1"}, 2, []string{"no model given", "superfluid bench path/to/model.gguf"}},
		{"bench two models", []string{"bench", "a.gguf", "b.gguf"}, 2, []string{"expected one model, got 2"}},
		{"worker argument", []string{"worker", "extra"}, 2, []string{"expected at most 0 arguments"}},
		{"port in use", []string{"serve", "--port", busyPort, "--data-dir", data, testModel}, 1, []string{"listen on 127.0.0.1:" + busyPort, "pass --port"}},
		{"data dir unusable", []string{"serve", "--port", "0", "--data-dir", filepath.Join(notDir, "sub"), testModel}, 1, []string{"open the database"}},
		{"worker load failure", []string{"worker", "--model", filepath.Join(data, "nope.gguf"), "--socket", filepath.Join(data, "s")}, 1, []string{"worker:"}},
		{"serve unknown id", []string{"serve", "--port", "0", "--data-dir", data, "no-such-model"}, 2, []string{`"no-such-model" is not in the catalog`}},
		{"pull no reference", []string{"pull", "--data-dir", data}, 2, []string{"pass one reference"}},
		{"pull an Ollama name", []string{"pull", "--data-dir", data, "llama3.2"}, 2, []string{"only Hugging Face references"}},
		{"pull a path", []string{"pull", "--data-dir", data, "owner/repo/../../x.gguf"}, 2, []string{".."}},
		{"pull unknown repo", []string{"pull", "--data-dir", data, "--hf-endpoint", hub.URL(), "owner/none:Q4_K_M"}, 2, []string{"owner/none"}},
		{"add nothing", []string{"add", "--data-dir", data}, 2, []string{"pass one .gguf file"}},
		{"add a missing file", []string{"add", "--data-dir", data, filepath.Join(data, "nope.gguf")}, 2, []string{"cannot be added"}},
		{"add a file that is not GGUF", []string{"add", "--data-dir", data, notDir}, 2, []string{"not a usable GGUF model"}},
		{"add a bad name", []string{"add", "--data-dir", data, "--name", "../x", testModel}, 2, []string{".."}},
		{"rm nothing", []string{"rm", "--data-dir", data}, 2, []string{"name the model to remove"}},
		{"rm unknown", []string{"rm", "--data-dir", data, "nope"}, 2, []string{`"nope" is not in the catalog`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(append([]string{"superfluid"}, c.args...), &stdout, &stderr)
			if code != c.code {
				t.Errorf("exit %d, want %d; stderr %q", code, c.code, stderr.String())
			}
			for _, w := range c.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr %q lacks %q", stderr.String(), w)
				}
			}
		})
	}
}

// TestCLIFlagsAroundModel: flags parse before and after the positional MODEL, in --x v and
// --x=v spelling.
func TestCLIFlagsAroundModel(t *testing.T) {
	for _, args := range [][]string{
		{"--port", "9", "--ctx=128", "--completion-deadline-ms", "250", "m.gguf", "--parallel", "3",
			"--completion-rate", "2.5", "--trusted-proxies", "127.0.0.1,10.0.0.0/8", "--trusted-proxies", "::1"},
		{"m.gguf", "--port=9", "--ctx", "128", "--completion-deadline-ms=250", "--parallel=3",
			"--completion-rate=2.5", "--trusted-proxies=127.0.0.1, 10.0.0.0/8,::1"},
	} {
		cmd := newServeCommand()
		var model string
		cmd.RunE = func(_ *cobra.Command, args []string) error {
			model = args[0]
			return nil
		}
		cmd.SetArgs(args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		fs := cmd.Flags()
		port, _ := fs.GetInt("port")
		ctx, _ := fs.GetInt("ctx")
		parallel, _ := fs.GetInt("parallel")
		deadline := fs.Lookup("completion-deadline-ms").Value.String()
		if port != 9 || ctx != 128 || parallel != 3 || deadline != "250" || model != "m.gguf" {
			t.Errorf("%v: port %d ctx %d parallel %d deadline %s model %q", args, port, ctx, parallel, deadline, model)
		}
		rate, proxies := fs.Lookup("completion-rate").Value.String(), fs.Lookup("trusted-proxies").Value.String()
		if rate != "2.5" || proxies != "127.0.0.1,10.0.0.0/8,::1" {
			t.Errorf("%v: completion-rate %s trusted-proxies %s", args, rate, proxies)
		}
	}
}

// TestTrustedProxiesNeedAKey: --trusted-proxies without any key refuses to start (behind a
// proxy on this machine every client would be a loopback admin), with or without
// --insecure-open, and says what to do; with a key from --api-key or the keys table it serves
// and every request needs a key.
func TestTrustedProxiesNeedAKey(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--port", "0", "--data-dir", t.TempDir(), "--trusted-proxies", "127.0.0.1"},
		{"serve", "--port", "0", "--data-dir", t.TempDir(), "--trusted-proxies", "10.0.0.0/8", "--host", "0.0.0.0", "--insecure-open"},
	} {
		code, out := refusedServe(t, args...)
		if code != 2 || strings.Count(out, "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q", args, code, out)
		}
		for _, w := range []string{"refusing --trusted-proxies without an API key", "--api-key", "--key-policy", "superfluid keys create", "drop --trusted-proxies"} {
			if !strings.Contains(out, w) {
				t.Errorf("%v: stderr %q lacks %q", args, out, w)
			}
		}
	}
	p := startServe(t, "--trusted-proxies", "127.0.0.1", "--api-key", "sk-sf-behind-a-proxy")
	if res, _ := servertest.Do(t, "GET", p.url+"/v1/models", "", "X-Forwarded-For", "203.0.113.9"); res.StatusCode != 401 {
		t.Errorf("a keyless request through the proxy: %d", res.StatusCode)
	}
	if res, body := servertest.Do(t, "GET", p.url+"/v1/models", "", "Authorization", "Bearer sk-sf-behind-a-proxy"); res.StatusCode != 200 {
		t.Errorf("with the key: %d %s", res.StatusCode, body)
	}
	p.stop(t)

	data := t.TempDir()
	if code, _, errOut := cli("keys", "create", "ops", "--admin", "--data-dir", data); code != 0 {
		t.Fatalf("keys create: %d %s", code, errOut)
	}
	p = startServe(t, "--trusted-proxies", "127.0.0.1", "--data-dir", data)
	if res, _ := servertest.Do(t, "GET", p.url+"/v1/models", ""); res.StatusCode != 401 {
		t.Errorf("a keyless request with a stored key: %d", res.StatusCode)
	}
	p.stop(t)
}

// refusedServe runs superfluid ARGS as a process that should refuse to start, and returns its
// exit code and its own lines on stderr (those starting "superfluid:"; libraries may log
// too); one that starts serving instead fails the test (and is killed).
func refusedServe(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines, own []string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.HasPrefix(sc.Text(), "superfluid:") {
			own = append(own, sc.Text())
		}
		if strings.Contains(sc.Text(), "serving") {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("%v started serving:\n%s", args, strings.Join(lines, "\n"))
		}
	}
	cmd.Wait()
	return cmd.ProcessState.ExitCode(), strings.Join(own, "\n")
}
