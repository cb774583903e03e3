// Package supervise runs a model server that superfluid starts itself — `vllm serve {model}
// --port {port}`, `llama-server -m {model} --port {port}`, another `superfluid serve {model}
// --port {port}` — and keeps it serving: the command template is split without a shell
// (SplitCommand), started on a free port in its own process group, its output kept in a
// rotated log with the last lines in memory, its health polled (GET /health, else
// /v1/models), and it is restarted with capped exponential backoff when it exits or stops
// answering. A Process's URL is what a forwarding engine sends requests to; while the server
// is not healthy, RetryAfter says when to try again.
//
// It is pure Go and knows nothing of the HTTP API superfluid serves: lanes and the
// forwarding engine (elsewhere) use it.
package supervise

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// State is where a supervised server stands.
type State string

const (
	// Starting: the process runs and its health checks have not answered 200 yet.
	Starting State = "starting"
	// Healthy: the server answers; URL is where.
	Healthy State = "healthy"
	// Failed: the process exited, never became healthy or stopped answering; it is started
	// again after a backoff.
	Failed State = "failed"
	// Stopped: Stop was called; nothing runs and nothing will.
	Stopped State = "stopped"
)

// Config says what to run and how patiently. Zero durations and sizes take the defaults given.
type Config struct {
	// Command is the template, e.g. "vllm serve {model} --port {port}" (see SplitCommand for
	// the quoting rules). It must hold {port}; {model} is optional. Both are replaced wherever
	// they stand in a word, quoted or not, after the split, so the values are never parsed.
	Command string
	// Model replaces {model}; Switch changes it.
	Model string
	// LogDir is the folder of the server's log, Name+".log" (and the rotated Name+".log.1").
	LogDir string
	// Name names the log file; default "server". A lane's name fits.
	Name string
	// Env is added to superfluid's own environment for the server; Dir is its working folder.
	Env []string
	// APIKey, when set, is the key the server must ask of its clients, so that nothing on this
	// machine reaches it around the gateway's keys, bookings and accounting: it replaces
	// {api_key} in the template, is put in the environment variables the known servers read
	// (APIKeyEnv), and goes with every health check.
	APIKey string
	Dir    string
	// Host is the address the server is reached at; default 127.0.0.1.
	Host string
	// KeepPort keeps a restarted server on the port it first had: when that port is taken (a
	// process that bound it meanwhile), the start fails and backs off until it is free, for
	// whoever holds the URL (a forwarding engine) would never find the server elsewhere.
	// Without it the server moves to a free port.
	KeepPort bool
	// StartTimeout bounds how long a start may take to answer its first health check; default
	// 10 minutes (a large model on vLLM loads for minutes).
	StartTimeout time.Duration
	// CheckInterval is the time between health checks (default 500ms); CheckTimeout bounds
	// one check (default 5s); a healthy server failing FailAfter checks in a row (default 3)
	// is restarted.
	CheckInterval time.Duration
	CheckTimeout  time.Duration
	FailAfter     int
	// Grace is how long a stopping server has between SIGTERM and SIGKILL; default 10s.
	Grace time.Duration
	// MinBackoff doubles after each failed run up to MaxBackoff (defaults 1s and 1m); a run
	// healthy for ResetAfter (default 1m) starts the count again.
	MinBackoff time.Duration
	MaxBackoff time.Duration
	ResetAfter time.Duration
	// LogMaxBytes is the size at which the log rotates (default 10 MiB); TailLines is how many
	// of its last lines are kept in memory (default 50).
	LogMaxBytes int64
	TailLines   int
	// OnChange, when set, is called with every new status, one call at a time, in order, from
	// the supervising goroutine: it must not block for long nor call Stop.
	OnChange func(Status)
}

func (c *Config) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.StartTimeout, 10*time.Minute)
	def(&c.CheckInterval, 500*time.Millisecond)
	def(&c.CheckTimeout, 5*time.Second)
	def(&c.Grace, 10*time.Second)
	def(&c.MinBackoff, time.Second)
	def(&c.MaxBackoff, time.Minute)
	def(&c.ResetAfter, time.Minute)
	if c.FailAfter <= 0 {
		c.FailAfter = 3
	}
	if c.LogMaxBytes <= 0 {
		c.LogMaxBytes = 10 << 20
	}
	if c.TailLines <= 0 {
		c.TailLines = 50
	}
	if c.Name == "" {
		c.Name = "server"
	}
	if c.Host == "" {
		c.Host = "127.0.0.1"
	}
}

// Status is a snapshot of a supervised server.
type Status struct {
	State State
	// URL is the server's base URL (http://host:port, no trailing slash) while Healthy, else "".
	URL   string
	Model string
	// PID is the running process (its group has the same id), 0 when none runs.
	PID int
	// Starts counts the processes started so far, restarts included.
	Starts int
	// Err says why the last run failed, with the last line it printed; "" before any failure.
	Err   string
	Since time.Time
}

// Process supervises one server. Its methods are safe for concurrent use.
type Process struct {
	cfg    Config
	words  []string
	log    *logFile
	client *http.Client

	mu          sync.Mutex
	status      Status
	changed     chan struct{} // closed and replaced at each status change
	startedAt   time.Time     // of the running process
	retryAt     time.Time     // when a failed server is started again
	lastStartup time.Duration // how long the last healthy start took
	port        int
	probe       string // the health path that answered last
	nextModel   *string

	switched chan struct{} // a Switch is pending (capacity 1)
	stop     chan struct{}
	stopOnce sync.Once
	grace    time.Duration // of the Stop in progress, set before stop closes
	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
}

// Start checks the template and the program, opens the log and starts supervising: the server
// is launched at once, and restarted as needed until Stop.
func Start(cfg Config) (*Process, error) {
	cfg.defaults()
	words, err := SplitCommand(cfg.Command)
	if err != nil {
		return nil, err
	}
	if err := checkTemplate(words); err != nil {
		return nil, err
	}
	if err := checkModel(cfg.Model); err != nil {
		return nil, err
	}
	if _, err := exec.LookPath(words[0]); err != nil {
		return nil, fmt.Errorf("command %q: %w", cfg.Command, err)
	}
	if cfg.Name != filepath.Base(cfg.Name) || cfg.Name == "." || cfg.Name == ".." {
		return nil, fmt.Errorf("supervise: the name %q is not a file name", cfg.Name)
	}
	if cfg.LogDir == "" {
		return nil, errors.New("supervise: no LogDir for the server's log")
	}
	if err := os.MkdirAll(cfg.LogDir, 0o700); err != nil {
		return nil, fmt.Errorf("the server's log folder: %w", err)
	}
	log, err := openLogFile(filepath.Join(cfg.LogDir, cfg.Name+".log"), cfg.LogMaxBytes, cfg.TailLines)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Process{
		cfg:      cfg,
		words:    words,
		log:      log,
		client:   &http.Client{Timeout: cfg.CheckTimeout, Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}},
		status:   Status{State: Starting, Model: cfg.Model, Since: time.Now()},
		changed:  make(chan struct{}),
		switched: make(chan struct{}, 1),
		stop:     make(chan struct{}),
		ctx:      ctx,
		cancel:   cancel,
		done:     make(chan struct{}),
	}
	go p.run()
	return p, nil
}

// Status returns the current status.
func (p *Process) Status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status
}

// State returns the current state.
func (p *Process) State() State { return p.Status().State }

// URL is the healthy server's base URL, "" while it is not healthy.
func (p *Process) URL() string { return p.Status().URL }

// LogPath is the server's log file (kept across restarts; the older part in LogPath()+".1").
func (p *Process) LogPath() string { return p.log.path }

// Tail returns the last lines the server (and the supervisor, marked "[supervise]") wrote.
func (p *Process) Tail() []string { return p.log.Tail() }

// RetryAfter estimates when a server that is not healthy will answer, in whole seconds, at
// least one: the time a start took the last time it succeeded (else 10s, capped by the start
// timeout) less the time this start has run, plus the backoff still to wait when it failed.
// It is 0 while healthy or stopped.
func (p *Process) RetryAfter() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	expected := p.lastStartup
	if expected == 0 {
		expected = min(10*time.Second, p.cfg.StartTimeout)
	}
	var left time.Duration
	switch p.status.State {
	case Starting:
		left = expected - time.Since(p.startedAt)
	case Failed:
		left = time.Until(p.retryAt) + expected
	default:
		return 0
	}
	return max(left.Round(time.Second), time.Second)
}

// WaitHealthy waits until the server is healthy (nil), stopped, or ctx ends; a failed server is
// waited for through its restarts. The error quotes the last failure.
func (p *Process) WaitHealthy(ctx context.Context) error {
	for {
		p.mu.Lock()
		st, ch := p.status, p.changed
		p.mu.Unlock()
		switch st.State {
		case Healthy:
			return nil
		case Stopped:
			return errors.New("the server was stopped")
		}
		select {
		case <-ch:
		case <-ctx.Done():
			if st.Err != "" {
				return fmt.Errorf("%w: the server is %s: %s", ctx.Err(), st.State, st.Err)
			}
			return fmt.Errorf("%w: the server is %s", ctx.Err(), st.State)
		}
	}
}

// Changed returns a channel closed at the next status change, for callers that watch without
// a callback: read Status, then wait on Changed (taken before, to miss nothing).
func (p *Process) Changed() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.changed
}

// Switch restarts the server with another model: the running process is stopped (SIGTERM,
// then SIGKILL after the grace period) and the template started again with model; the backoff
// count starts again. It returns at once; WaitHealthy tells when the new model answers.
func (p *Process) Switch(model string) error {
	select {
	case <-p.stop:
		return errors.New("the server was stopped")
	default:
	}
	if err := checkModel(model); err != nil {
		return err
	}
	p.mu.Lock()
	p.nextModel = &model
	p.mu.Unlock()
	select {
	case p.switched <- struct{}{}:
	default: // one already pending; it takes the newest model
	}
	return nil
}

// Stop ends supervision: SIGTERM to the server's process group, SIGKILL after the grace period
// (Config.Grace, shortened to fit ctx's deadline), and returns once every process of the group
// is gone and reaped. It returns ctx's error if ctx ends first (the kill still completes).
// Calling it again waits the same way.
func (p *Process) Stop(ctx context.Context) error {
	p.stopOnce.Do(func() {
		grace := p.cfg.Grace
		if dl, ok := ctx.Deadline(); ok {
			// Leave a little of ctx for the SIGKILL and the reaping.
			grace = min(grace, time.Until(dl)*9/10)
		}
		p.grace = max(grace, 0)
		close(p.stop)
		p.cancel()
	})
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// setStatus changes the status (only the supervising goroutine calls it) and tells watchers.
func (p *Process) setStatus(change func(*Status)) {
	p.mu.Lock()
	change(&p.status)
	p.status.Since = time.Now()
	st := p.status
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
	if p.cfg.OnChange != nil {
		p.cfg.OnChange(st)
	}
}

// pickPort keeps the last port when it is still free (a client that cached the URL finds the
// server again), else asks the kernel for a free one (with KeepPort: fails, to try again).
func (p *Process) pickPort() (int, error) {
	if p.port != 0 {
		l, err := net.Listen("tcp", net.JoinHostPort(p.cfg.Host, strconv.Itoa(p.port)))
		if err == nil {
			l.Close()
			return p.port, nil
		}
		if p.cfg.KeepPort {
			return 0, fmt.Errorf("the server's port %d is taken (%v); waiting for it to be free", p.port, err)
		}
	}
	l, err := net.Listen("tcp", net.JoinHostPort(p.cfg.Host, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lastLine is the last line the server printed, for error messages.
func (p *Process) lastLine() string {
	tail := p.log.Tail()
	for i := len(tail) - 1; i >= 0; i-- {
		if s := strings.TrimSpace(tail[i]); s != "" && !strings.HasPrefix(s, "[supervise]") {
			return s
		}
	}
	return ""
}
