package app

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAgentsInstall: make agents never fails the build. With the agents in place it does
// nothing; without npm, or when npm fails (no network), it says so, exits 0 and leaves no
// half-installed folder; the tests then skip with the reason.
func TestAgentsInstall(t *testing.T) {
	script, err := filepath.Abs("../scripts/agents/install.sh")
	if err != nil {
		t.Fatal(err)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	failingNPM := t.TempDir()
	if err := os.WriteFile(filepath.Join(failingNPM, "npm"), []byte("#!/bin/sh\necho 'npm error network ENOTFOUND registry.npmjs.org' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// An npm whose install leaves Claude Code's placeholder (install scripts off): it exits 1.
	stubNPM := t.TempDir()
	if err := os.WriteFile(filepath.Join(stubNPM, "npm"), []byte("#!/bin/sh\nmkdir -p node_modules/.bin\n"+
		"printf '#!/bin/sh\\necho placeholder >&2\\nexit 1\\n' > node_modules/.bin/claude\n"+
		"printf '#!/bin/sh\\necho 0.171.0\\n' > node_modules/.bin/codex\nchmod +x node_modules/.bin/*\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	installed := filepath.Join(t.TempDir(), "agents")
	for _, f := range []string{"claude", "codex"} {
		p := filepath.Join(installed, "node_modules", ".bin", f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// An agent that is there but does not run (Claude Code's placeholder) is skipped, saying why.
	if path, why := findAgent(filepath.Join(installed, "node_modules", ".bin"), "claude"); path == "" {
		t.Errorf("findAgent of an agent that runs: %q", why)
	}
	broken := filepath.Join(t.TempDir(), "agents", "node_modules", ".bin")
	if err := os.MkdirAll(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, "claude"), []byte("#!/bin/sh\necho placeholder >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if path, why := findAgent(broken, "claude"); path != "" || !strings.Contains(why, "installed but does not run") {
		t.Errorf("findAgent of the placeholder: %q, %q", path, why)
	}
	for _, tt := range []struct {
		name, dir, path, want string
	}{
		{"installed", installed, t.TempDir(), ""}, // an empty PATH: npm is never asked
		{"no npm", filepath.Join(t.TempDir(), "agents"), t.TempDir(), "npm is not installed; the coding-agent tests will skip"},
		{"npm fails", filepath.Join(t.TempDir(), "agents"), failingNPM + ":" + os.Getenv("PATH"), "npm ci failed (no network?); the coding-agent tests will skip"},
		{"placeholder agent", filepath.Join(t.TempDir(), "agents"), stubNPM + ":" + os.Getenv("PATH"), "claude --version failed after npm ci"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bash, script, tt.dir)
			cmd.Env = []string{"PATH=" + tt.path, "HOME=" + t.TempDir()}
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), tt.want) || tt.want == "" && len(out) > 0 {
				t.Fatalf("exit %v, output %q, want exit 0 and %q", err, out, tt.want)
			}
			if tt.want == "" {
				return
			}
			if _, err := os.Stat(tt.dir); !os.IsNotExist(err) {
				t.Errorf("%s exists after a failed install (%v)", tt.dir, err)
			}
			left, _ := filepath.Glob(tt.dir + ".partial.*")
			if len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
			if path, why := findAgent(filepath.Join(tt.dir, "node_modules", ".bin"), "claude"); path != "" || !strings.Contains(why, "make agents installs") {
				t.Errorf("findAgent after a failed install: %q, %q", path, why)
			}
			if tt.name == "no npm" {
				return
			}
			// A second make test within the hour does not wait on npm again.
			cmd = exec.Command(bash, script, tt.dir)
			cmd.Env = []string{"PATH=" + tt.path, "HOME=" + t.TempDir()}
			out, err = cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "the install failed less than an hour ago") {
				t.Errorf("second run after a failed install: exit %v, output %q", err, out)
			}
		})
	}
}
