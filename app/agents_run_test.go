package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// agentsEnv names the folder holding the agents' executables (node_modules/.bin of the
// pinned install); the Makefile sets it. Without it the tests look where make agents installs.
const agentsEnv = "SUPERFLUID_AGENTS"

// agentsDir is the folder of the agents' executables: agentsEnv's, else the Makefile's cache
// folder; "" and why when neither can be named.
func agentsDir() (string, string) {
	if dir := os.Getenv(agentsEnv); dir != "" {
		return dir, ""
	}
	dir, err := defaultAgentsDir()
	if err != nil {
		return "", err.Error()
	}
	return dir, ""
}

// findAgent is the path of an installed agent in dir, or "" and why it is absent.
func findAgent(dir, name string) (path, why string) {
	path = filepath.Join(dir, name)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Sprintf("%s is not installed (%v): make agents installs the pinned coding agents with npm (it needs a network); make test does it first", name, err)
	}
	if _, err := exec.LookPath("node"); err != nil && name == "codex" {
		return "", fmt.Sprintf("codex needs node on PATH: %v", err)
	}
	// An install whose scripts did not run leaves Claude Code's placeholder, which only prints
	// how to install: a broken install, not a failure of the server.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, path, "--version").CombinedOutput(); err != nil {
		return "", fmt.Sprintf("%s is installed but does not run (%v: %s): remove %s and run make agents", name, err, clipText(string(out), 300), filepath.Dir(filepath.Dir(dir)))
	}
	return path, ""
}

// defaultAgentsDir is where the Makefile installs the agents: a cache folder named by the hash
// of scripts/agents/package.json and package-lock.json (as `cat a b | sha256sum`).
func defaultAgentsDir() (string, error) {
	var pins []byte
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join("..", "scripts", "agents", f))
		if err != nil {
			return "", fmt.Errorf("no pinned agents: %w", err)
		}
		pins = append(pins, b...)
	}
	sum := sha256.Sum256(pins)
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home folder for the agents' cache: %w", err)
	}
	return filepath.Join(home, ".cache", "superfluid", "agents", hex.EncodeToString(sum[:])[:16], "node_modules", ".bin"), nil
}

// agentRun is one finished run of an agent.
type agentRun struct {
	stdout, stderr string
	err            error // nil when it exited 0
}

// agentTimeout bounds one agent run; the scripted loops and the free turns take seconds.
const agentTimeout = 90 * time.Second

// runAgent runs bin with args in dir, with a private HOME and only the environment given (plus
// PATH), and kills it and everything it started when it runs past agentTimeout or the test ends.
func runAgent(t *testing.T, dir, bin string, args []string, env ...string) agentRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), agentTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	home := t.TempDir()
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + t.TempDir(), "LANG=C.UTF-8", "TERM=dumb", "NO_COLOR=1"}, env...)
	cmd.Stdin = nil // an empty stdin: neither agent waits for input
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what it left running in its group
	}
	return agentRun{stdout: stdout.String(), stderr: stderr.String(), err: err}
}

// check fails the test unless the run exited 0, printing its output and the server's log.
func (r agentRun) check(t *testing.T, s *agentServer, from int) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("agent failed: %v\n--- stdout\n%s\n--- stderr\n%s\n--- requests\n%s", r.err,
			clipText(r.stdout, 8000), clipText(r.stderr, 8000), describe(s.log.since(from)))
	}
}
