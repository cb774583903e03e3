package supervise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// child is one started server process.
type child struct {
	cmd     *exec.Cmd
	pid     int
	url     string
	exited  chan struct{} // closed once the process is reaped; waitErr is set then
	waitErr error
	copied  chan struct{} // closed once every holder of its output pipe is gone
}

// runEnd is why a run ended.
type runEnd int

const (
	endFailed runEnd = iota
	endStop
	endSwitch
)

// run is the supervising goroutine: start, watch, stop, back off, again, until Stop.
func (p *Process) run() {
	defer close(p.done)
	defer p.log.Close()
	failures := 0
	for {
		c, err := p.launch()
		end, healthyFor := endFailed, time.Duration(0)
		if err == nil {
			end, healthyFor, err = p.watch(c)
			p.terminate(c)
		}
		switch end {
		case endStop:
			p.log.Printf("stopped")
			p.setStatus(func(s *Status) { *s = Status{State: Stopped, Model: s.Model, Starts: s.Starts, Err: s.Err} })
			return
		case endSwitch:
			failures = 0
			continue
		}
		if healthyFor >= p.cfg.ResetAfter {
			failures = 0
		}
		failures++
		delay := p.cfg.MinBackoff << min(failures-1, 30)
		if delay <= 0 || delay > p.cfg.MaxBackoff {
			delay = p.cfg.MaxBackoff
		}
		msg := err.Error()
		// A start that failed before the process ran has no output of its own to quote.
		if line := p.lastLine(); line != "" && c != nil {
			msg += "; last output: " + line
		}
		p.log.Printf("%s; starting again in %s", err, delay)
		p.mu.Lock()
		p.retryAt = time.Now().Add(delay)
		p.mu.Unlock()
		p.setStatus(func(s *Status) { s.State, s.URL, s.PID, s.Err = Failed, "", 0, msg })
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-p.switched:
			t.Stop()
			failures = 0
		case <-p.stop:
			t.Stop()
			p.log.Printf("stopped")
			p.setStatus(func(s *Status) { s.State = Stopped })
			return
		}
	}
}

// launch starts the template on a free port with the current model, its output going to the
// log through a pipe this package reads (so waiting for the process never waits for the
// output of a descendant that escaped the group).
func (p *Process) launch() (*child, error) {
	p.mu.Lock()
	if p.nextModel != nil {
		p.status.Model, p.nextModel = *p.nextModel, nil
	}
	model := p.status.Model
	p.mu.Unlock()
	port, err := p.pickPort()
	if err != nil {
		return nil, err
	}
	p.port = port
	args := expandArgs(p.words, model, port, p.cfg.APIKey)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), p.cfg.Env...)
	if p.cfg.APIKey != "" {
		for _, name := range APIKeyEnv {
			cmd.Env = append(cmd.Env, name+"="+p.cfg.APIKey) // the last of a name wins
		}
	}
	cmd.Dir = p.cfg.Dir
	cmd.SysProcAttr = serverProcAttr()
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", args[0], err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	p.log.Printf("starting %q", expandArgs(p.words, model, port, "<api key>")) // the log may be shown
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("start %s: %w", args[0], err)
	}
	w.Close()
	c := &child{cmd: cmd, pid: cmd.Process.Pid, url: "http://" + net.JoinHostPort(p.cfg.Host, strconv.Itoa(port)),
		exited: make(chan struct{}), copied: make(chan struct{})}
	go func() {
		io.Copy(p.log, r)
		r.Close()
		close(c.copied)
	}()
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	p.mu.Lock()
	p.startedAt = time.Now()
	p.mu.Unlock()
	p.setStatus(func(s *Status) { s.State, s.URL, s.PID = Starting, "", c.pid; s.Starts++ })
	return c, nil
}

// watch polls the child's health until it exits, fails to start in time, stops answering, or
// a Stop or Switch comes. healthyFor is how long it was healthy.
func (p *Process) watch(c *child) (end runEnd, healthyFor time.Duration, err error) {
	started := time.Now()
	var healthySince time.Time
	since := func() time.Duration {
		if healthySince.IsZero() {
			return 0
		}
		return time.Since(healthySince)
	}
	misses := 0
	tick := time.NewTicker(p.cfg.CheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-c.exited:
			if healthySince.IsZero() {
				return endFailed, 0, fmt.Errorf("exited at start (%s) after %s", exitText(c.waitErr), roundTime(time.Since(started)))
			}
			return endFailed, since(), fmt.Errorf("exited (%s) after %s healthy", exitText(c.waitErr), roundTime(since()))
		case <-p.stop:
			return endStop, since(), nil
		case <-p.switched:
			p.log.Printf("switching model")
			return endSwitch, since(), nil
		case <-tick.C:
		}
		ok := p.check(c.url)
		switch {
		case ok && healthySince.IsZero():
			healthySince = time.Now()
			p.mu.Lock()
			p.lastStartup = time.Since(started)
			p.mu.Unlock()
			p.log.Printf("healthy at %s after %s", c.url, roundTime(time.Since(started)))
			p.setStatus(func(s *Status) { s.State, s.URL = Healthy, c.url })
			misses = 0
		case ok:
			misses = 0
		case healthySince.IsZero() && time.Since(started) >= p.cfg.StartTimeout:
			return endFailed, 0, fmt.Errorf("not healthy after the start timeout of %s", p.cfg.StartTimeout)
		case !healthySince.IsZero():
			if misses++; misses >= p.cfg.FailAfter {
				return endFailed, since(), fmt.Errorf("stopped answering its health check (%d in a row failed)", misses)
			}
		}
	}
}

// APIKeyEnv are the environment variables in which the servers a command lane runs read the key
// they ask of clients: llama-server's, vLLM's and superfluid's own. A server that reads none
// (SGLang) takes it as {api_key} on its command line (visible to local users in its argv).
var APIKeyEnv = []string{"LLAMA_API_KEY", "VLLM_API_KEY", "SUPERFLUID_API_KEY"}

// check asks GET /health, then /v1/models (the one that answered last goes first); any 200
// is healthy. vLLM, SGLang, llama-server and superfluid have /health; Ollama has /v1/models.
func (p *Process) check(base string) bool {
	paths := []string{"/health", "/v1/models"}
	if p.probe == paths[1] {
		paths[0], paths[1] = paths[1], paths[0]
	}
	for _, path := range paths {
		req, err := http.NewRequestWithContext(p.ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return false
		}
		if p.cfg.APIKey != "" {
			req.Header.Set("Authorization", "Bearer "+p.cfg.APIKey) // Ollama-style /v1/models asks for it
		}
		res, err := p.client.Do(req)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return false
			}
			continue
		}
		io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
		res.Body.Close()
		if res.StatusCode == http.StatusOK {
			p.probe = path
			return true
		}
	}
	return false
}

// terminate ends the child's whole process group: SIGTERM, SIGKILL once the grace period is
// over, then SIGKILL again for whatever of the group outlived its leader; the leader is
// reaped by its Wait goroutine, so no zombie stays.
func (p *Process) terminate(c *child) {
	grace := p.cfg.Grace
	select {
	case <-p.stop:
		grace = p.grace
	default:
	}
	select {
	case <-c.exited:
	default:
		syscall.Kill(-c.pid, syscall.SIGTERM)
		t := time.NewTimer(grace)
		select {
		case <-c.exited:
			t.Stop()
		case <-t.C:
			p.log.Printf("still running %s after SIGTERM; SIGKILL", grace)
			syscall.Kill(-c.pid, syscall.SIGKILL)
			<-c.exited
		}
	}
	syscall.Kill(-c.pid, syscall.SIGKILL)
	// A descendant that left the group may still hold the output pipe; do not wait on it long.
	select {
	case <-c.copied:
	case <-time.After(time.Second):
	}
	p.log.Printf("process %d ended: %s", c.pid, exitText(c.waitErr))
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return strings.TrimPrefix(err.Error(), "exec: ") // "exit status 3", "signal: killed"
}

func roundTime(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}
