// Package peertest runs a real Ollama server (`ollama serve`, built by `make peers` from the
// github.com/ollama/ollama module go.mod pins) as a peer for tests: an upstream to forward to, and
// a reference to compare superfluid's own Ollama dialect against. Start gives a running server on
// a free loopback port, with its own temporary OLLAMA_MODELS and HOME, and a model created from a
// GGUF file (by default stories260K from ../shared/models); the test's cleanup stops it and every
// process it started. Tests only: no production package imports it (checked in
// app/imports_peer_test.go), and it imports nothing of the module, so any package's tests may.
package peertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Ollama is a running `ollama serve`.
type Ollama struct {
	// URL is the server's base URL (http://127.0.0.1:PORT, no trailing slash): the native API
	// under /api, the OpenAI-compatible one under /v1.
	URL string
	// Model is the name of the model Start created (Model.Name, e.g. "stories260k:latest").
	Model string
	// Binary is the ollama executable it runs.
	Binary string

	cmd     *exec.Cmd
	env     []string
	logPath string
	exited  chan struct{}
	stop    sync.Once
}

// Model is the model Start creates on the server: Name (Ollama's model name: lower case, a tag
// after ':' optional) from the GGUF file at Path, with Modelfile's extra lines (TEMPLATE,
// PARAMETER, SYSTEM, ...) after its FROM line.
type Model struct {
	Name      string
	Path      string
	Modelfile string
}

// StoriesName is the name Start gives the default model (stories260K).
const StoriesName = "stories260k"

// StoriesModelfile is the default model's Modelfile tail. stories260K has no chat template, so
// the template lays the messages out as plain text (it writes a story after them); num_ctx keeps
// the context at the model's own 2048 and its memory small; one thread is all a 260K-parameter
// model can use, and more would spin against the other tests on a busy machine.
const StoriesModelfile = `TEMPLATE """{{- range .Messages }}{{ .Content }}
{{ end }}"""
PARAMETER num_ctx 2048
PARAMETER num_thread 1
`

// Start runs `ollama serve` for t and creates model on it (the default, stories260K from
// ../shared/models, when none is given). It skips t, saying why, when the binary or the default
// model is absent (a test that must run on a fresh clone passes a GGUF it wrote, such as
// gguftest's tiny llama), and fails t when the server does not start or the model cannot be
// created.
// The server stops, with every process it started, when t's cleanup runs.
func Start(t testing.TB, model ...Model) *Ollama {
	t.Helper()
	bin, why := Binary()
	if bin == "" {
		t.Skip(why)
	}
	m := Model{Name: StoriesName, Modelfile: StoriesModelfile}
	if len(model) > 0 {
		m = model[0]
	}
	if m.Path == "" {
		dir, why := SharedModels()
		if dir == "" {
			t.Skip(why)
		}
		m.Path = filepath.Join(dir, "stories260K.gguf")
	}
	o := StartServer(t, bin)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := o.Create(ctx, m); err != nil {
		t.Fatalf("peertest: %v\n%s", err, o.LogTail(40))
	}
	o.Model = m.Name
	if !strings.Contains(o.Model, ":") {
		o.Model += ":latest"
	}
	return o
}

// StartServer runs `ollama serve` from bin for t, with no model, and waits until it answers.
func StartServer(t testing.TB, bin string) *Ollama {
	t.Helper()
	dir := t.TempDir()
	var lastErr error
	// The free port is found by listening and closing, so another process can take it before
	// ollama binds it; a second try on a fresh port covers that race.
	for attempt := 0; attempt < 3; attempt++ {
		o, err := start(bin, filepath.Join(dir, fmt.Sprint(attempt)))
		if err == nil {
			t.Cleanup(func() {
				if err := o.Stop(); err != nil {
					t.Errorf("peertest: stop ollama: %v", err)
				}
			})
			return o
		}
		lastErr = err
	}
	t.Fatalf("peertest: %v", lastErr)
	return nil
}

func start(bin, dir string) (*Ollama, error) {
	home, models := filepath.Join(dir, "home"), filepath.Join(dir, "models")
	for _, d := range []string{home, models} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	host := fmt.Sprintf("127.0.0.1:%d", port)
	o := &Ollama{URL: "http://" + host, Binary: bin, logPath: filepath.Join(dir, "ollama.log"), exited: make(chan struct{})}
	o.env = append(cleanEnv(os.Environ()),
		"HOME="+home,
		"OLLAMA_HOST="+host,
		"OLLAMA_MODELS="+models,
		// One model at a time and one request slot keep the peer's memory small and its
		// behaviour predictable; no update checks or telemetry from a test.
		"OLLAMA_MAX_LOADED_MODELS=1",
		"OLLAMA_NUM_PARALLEL=1",
		"OLLAMA_KEEP_ALIVE=5m",
		"OLLAMA_NOPRUNE=1",
		"OLLAMA_NO_CLOUD=1",
	)
	logFile, err := os.Create(o.logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	o.cmd = exec.Command(bin, "serve")
	o.cmd.Env = o.env
	o.cmd.Dir = dir
	o.cmd.Stdout, o.cmd.Stderr = logFile, logFile
	o.cmd.SysProcAttr = groupAttr()
	if err := o.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s serve: %w", bin, err)
	}
	go func() {
		o.cmd.Wait()
		close(o.exited)
	}()
	if err := o.waitReady(30 * time.Second); err != nil {
		o.Stop()
		return nil, fmt.Errorf("%w\n%s", err, o.LogTail(20))
	}
	return o, nil
}

// cleanEnv drops the caller's OLLAMA_* settings, so a developer's own configuration (a remote
// OLLAMA_HOST, a models folder) never reaches the test's server.
func cleanEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "OLLAMA_") && !strings.HasPrefix(kv, "HOME=") {
			out = append(out, kv)
		}
	}
	return out
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls /api/version until the server answers, it exits, or limit passes.
func (o *Ollama) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	client := &http.Client{Timeout: 2 * time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-o.exited:
			return fmt.Errorf("ollama serve exited at start (%v)", o.cmd.ProcessState)
		default:
		}
		resp, err := client.Get(o.URL + "/api/version")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("ollama serve did not answer on %s within %v", o.URL, limit)
}

// Create makes model m on the server with the ollama CLI (`ollama create NAME -f Modelfile`,
// which uploads the GGUF as a blob and calls /api/create).
func (o *Ollama) Create(ctx context.Context, m Model) error {
	if m.Name == "" || m.Path == "" {
		return errors.New("create: a model needs a Name and a Path")
	}
	path, err := filepath.Abs(m.Path)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp(filepath.Dir(o.logPath), "create-")
	if err != nil {
		return err
	}
	modelfile := filepath.Join(dir, "Modelfile")
	if err := os.WriteFile(modelfile, []byte("FROM "+path+"\n"+m.Modelfile), 0o644); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, o.Binary, "create", m.Name, "-f", modelfile)
	cmd.Env, cmd.Dir = o.env, dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ollama create %s: %v\n%s", m.Name, err, lastLines(out, 20))
	}
	return nil
}

// Stop ends the server and every process it started (its model runners): SIGTERM to its
// process group, SIGKILL after 10 s. Start's cleanup calls it; calling it again is a no-op.
func (o *Ollama) Stop() error {
	var err error
	o.stop.Do(func() {
		signalGroup(o.cmd.Process, false)
		select {
		case <-o.exited:
		case <-time.After(10 * time.Second):
			err = errors.New("ollama serve ignored SIGTERM for 10 s; killed")
		}
		// The runners are in the same group; kill any that outlived the server.
		signalGroup(o.cmd.Process, true)
		<-o.exited
	})
	return err
}

// OpenAI is the base URL of the server's OpenAI-compatible API (URL + "/v1"), what an openai
// engine or openai-go's option.WithBaseURL takes.
func (o *Ollama) OpenAI() string { return o.URL + "/v1" }

// Pid is the server process's id (its process group's too).
func (o *Ollama) Pid() int { return o.cmd.Process.Pid }

// LogTail is the last n lines of the server's log, for a failure message.
func (o *Ollama) LogTail(n int) string {
	b, _ := os.ReadFile(o.logPath)
	return lastLines(b, n)
}

func lastLines(b []byte, n int) string {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
