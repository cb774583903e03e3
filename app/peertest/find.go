package peertest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// BinaryEnv names the ollama executable to run; make exports it (the binary `make peers` built).
const BinaryEnv = "SUPERFLUID_OLLAMA"

// Binary finds the ollama executable: $SUPERFLUID_OLLAMA, else the one `make peers` builds for the
// version go.mod pins (~/.cache/superfluid/peers/ollama-VERSION/ollama). It checks that the file
// runs (`ollama --version`). Without one it returns "" and why, saying how to get one.
func Binary() (path, why string) {
	path = os.Getenv(BinaryEnv)
	if path == "" {
		version, err := PinnedVersion()
		if err != nil {
			return "", "peertest: " + err.Error()
		}
		home, err := os.UserHomeDir()
		if err != nil {
			return "", "peertest: no home folder to find the ollama build in: " + err.Error()
		}
		path = filepath.Join(home, ".cache", "superfluid", "peers", "ollama-"+version, "ollama")
	}
	if _, err := os.Stat(path); err != nil {
		hint := "run `make peers` (make test does)"
		if _, err := os.Stat(filepath.Dir(path) + ".failed"); err == nil {
			hint = "`make peers` failed; its log is " + filepath.Dir(path) + ".failed"
		}
		return "", fmt.Sprintf("peertest: no ollama binary at %s: %s", path, hint)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	// A developer's OLLAMA_HOST could make --version wait on a remote server; ollama needs a HOME
	// (it panics without one) and may write in it.
	home, err := os.MkdirTemp("", "peertest-home-")
	if err != nil {
		return "", "peertest: " + err.Error()
	}
	defer os.RemoveAll(home)
	cmd.Env = append(cleanEnv(os.Environ()), "OLLAMA_HOST=127.0.0.1:1", "HOME="+home)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Sprintf("peertest: %s does not run (%v): %s", path, err, lastLines(out, 3))
	}
	return path, ""
}

// SharedModels is the ../shared/models folder beside the module's root (the test models the
// build machines hold), or "" and why when this checkout has none.
func SharedModels() (dir, why string) {
	root, err := moduleRoot()
	if err != nil {
		return "", "peertest: " + err.Error()
	}
	dir = filepath.Join(filepath.Dir(root), "shared", "models")
	if _, err := os.Stat(filepath.Join(dir, "stories260K.gguf")); err != nil {
		return "", "peertest: no ../shared/models/stories260K.gguf beside " + root
	}
	return dir, ""
}

// PinnedVersion is the github.com/ollama/ollama version the module's go.mod requires.
func PinnedVersion() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	f, err := os.Open(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(s.Text()), "require "))
		if len(fields) >= 2 && fields[0] == "github.com/ollama/ollama" {
			return fields[1], nil
		}
	}
	return "", fmt.Errorf("go.mod in %s does not require github.com/ollama/ollama", root)
}

// moduleRoot is the nearest folder at or above the working directory (a test's package folder)
// with a go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod at or above the working directory")
		}
		dir = parent
	}
}
