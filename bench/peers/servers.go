package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// process is a server process in a group of its own, logging to a file.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

func startProcess(dir string, env []string, name string, args ...string) (*process, error) {
	logFile, err := os.OpenFile(filepath.Join(dir, "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(name, args...)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = env, dir, logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(p.exited) }()
	return p, nil
}

// stop sends SIGTERM to the process group (the server and its workers or runners), SIGKILL
// after 30 s.
func (p *process) stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
}

// waitReady polls url until it answers 200 or the process exits.
func waitReady(p *process, url string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return errors.New("the server exited (see server.log in its folder)")
		default:
		}
		if res, err := http.Get(url); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer within %s", url, d)
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// ollama is the pinned Ollama: its own HOME and model store, the GGUF imported with
// `ollama create` on the first start.
type ollama struct {
	c         config
	dir, addr string
	proc      *process
	created   bool
}

func (o *ollama) name() string  { return "ollama" }
func (o *ollama) url() string   { return "http://" + o.addr }
func (o *ollama) model() string { return "peer:latest" }
func (o *ollama) extra(bool) map[string]any {
	return nil // no speculation to ask for
}

func (o *ollama) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OLLAMA_") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+filepath.Join(o.dir, "home"), "OLLAMA_HOST="+o.addr, "OLLAMA_MODELS="+filepath.Join(o.dir, "models"),
		"OLLAMA_MAX_LOADED_MODELS=1", fmt.Sprintf("OLLAMA_NUM_PARALLEL=%d", o.c.streams), "OLLAMA_KEEP_ALIVE=30m",
		"OLLAMA_NOPRUNE=1", "OLLAMA_NO_CLOUD=1")
}

func (o *ollama) start() (err error) {
	if o.dir == "" {
		if o.dir, err = os.MkdirTemp("", "peers-ollama-"); err != nil {
			return err
		}
		os.MkdirAll(filepath.Join(o.dir, "home"), 0o755)
	}
	if o.addr, err = freeAddr(); err != nil {
		return err
	}
	if o.proc, err = startProcess(o.dir, o.env(), o.c.ollama, "serve"); err != nil {
		return err
	}
	if err := waitReady(o.proc, o.url()+"/api/version", time.Minute); err != nil {
		return err
	}
	if o.created {
		return nil
	}
	modelfile := fmt.Sprintf("FROM %s\nTEMPLATE \"\"\"{{- range .Messages }}{{ .Content }}\n{{ end }}\"\"\"\nPARAMETER num_ctx %d\n", o.c.model, o.c.ctx)
	if o.c.threads > 0 {
		modelfile += fmt.Sprintf("PARAMETER num_thread %d\n", o.c.threads)
	}
	if err := os.WriteFile(filepath.Join(o.dir, "Modelfile"), []byte(modelfile), 0o644); err != nil {
		return err
	}
	cmd := exec.Command(o.c.ollama, "create", "peer", "-f", filepath.Join(o.dir, "Modelfile"))
	cmd.Env, cmd.Dir = o.env(), o.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ollama create: %v\n%s", err, out)
	}
	o.created = true
	return nil
}

func (o *ollama) stop()          { o.proc.stop(); o.proc = nil }
func (o *ollama) folder() string { return o.dir }

// superfluid is `superfluid serve MODEL` on a data folder of its own.
type superfluid struct {
	c             config
	dir, addr, id string
	proc          *process
}

func (s *superfluid) name() string  { return "superfluid" }
func (s *superfluid) url() string   { return "http://" + s.addr }
func (s *superfluid) model() string { return s.id }
func (s *superfluid) extra(speculate bool) map[string]any {
	if speculate {
		return map[string]any{"speculative": "ngram"}
	}
	return map[string]any{"speculative": "off"}
}

func (s *superfluid) start() (err error) {
	if s.dir == "" {
		if s.dir, err = os.MkdirTemp("", "peers-superfluid-"); err != nil {
			return err
		}
	}
	if s.addr, err = freeAddr(); err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(s.addr)
	args := []string{"serve", s.c.model, "--host", host, "--port", port, "--data-dir", filepath.Join(s.dir, "data"),
		"--parallel", fmt.Sprint(s.c.streams), "--ctx", fmt.Sprint(s.c.ctx)}
	if s.c.threads > 0 {
		args = append(args, "--threads", fmt.Sprint(s.c.threads))
	}
	if s.proc, err = startProcess(s.dir, os.Environ(), s.c.superfluid, args...); err != nil {
		return err
	}
	if err := waitReady(s.proc, s.url()+"/v1/models", time.Minute); err != nil {
		return err
	}
	var models struct{ Data []struct{ ID string } }
	res, err := http.Get(s.url() + "/v1/models")
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(&models); err != nil {
		return err
	}
	base := strings.TrimSuffix(filepath.Base(s.c.model), ".gguf")
	for _, m := range models.Data {
		if s.id == "" || strings.Contains(m.ID, base) {
			s.id = m.ID
		}
	}
	if s.id == "" {
		return errors.New("/v1/models lists no model")
	}
	return nil
}

func (s *superfluid) stop()          { s.proc.stop(); s.proc = nil }
func (s *superfluid) folder() string { return s.dir }
