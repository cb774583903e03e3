package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
)

// Options say how to start a worker for one model.
type Options struct {
	// Command is the worker program and its leading arguments, e.g. {"/usr/bin/superfluid", "worker"}.
	Command []string
	// Env is added to the worker's environment.
	Env           []string
	ModelPath     string
	ContextLength int
	Parallel      int
	Threads       int
	// Log receives the worker's stderr (llama.cpp's log); nil discards it.
	Log io.Writer
	// StartTimeout bounds loading the model; 0 means 5 minutes.
	StartTimeout time.Duration
	// SocketDir holds the workers' private socket directories (the data dir's run/); "" or a
	// path too long for a unix socket falls back to the system temp dir.
	SocketDir string
}

// Client is the app's handle on a worker process. It implements llm.Engine and starts a new
// worker on the next call after one has died.
type Client struct {
	opts Options

	mu       sync.Mutex
	proc     *process
	info     llm.ModelInfo
	closed   bool
	starting *start // a launch in progress, or nil
}

// NewClient returns a client; the worker starts on Start or the first call.
func NewClient(opts Options) *Client {
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 5 * time.Minute
	}
	return &Client{opts: opts}
}

// Start makes sure a worker is running with the model loaded.
func (c *Client) Start(ctx context.Context) error {
	_, err := c.running(ctx)
	return err
}

// Info describes the model as the last started worker reported it.
func (c *Client) Info() llm.ModelInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.info
}

// Loaded reports whether a worker is running with the model loaded.
func (c *Client) Loaded() bool { return c.PID() != 0 }

// PID is the running worker's process id, or 0.
func (c *Client) PID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc == nil || c.proc.hasExited() {
		return 0
	}
	return c.proc.cmd.Process.Pid
}

// Tokenize asks the worker for the token ids of text.
func (c *Client) Tokenize(ctx context.Context, text string, addSpecial, parseSpecial bool) ([]int, error) {
	var tokens []int
	err := c.do(ctx, call{Op: opTokenize, Text: text, AddSpecial: addSpecial, ParseSpecial: parseSpecial}, func(r reply) error {
		tokens = r.Tokens
		return nil
	})
	return tokens, err
}

// Slots asks the worker for a snapshot of its lanes.
func (c *Client) Slots(ctx context.Context) (llm.Slots, error) {
	var slots llm.Slots
	err := c.do(ctx, call{Op: opSlots}, func(r reply) error {
		if r.Slots != nil {
			slots = *r.Slots
		}
		return nil
	})
	return slots, err
}

// Generate runs one generation in the worker.
func (c *Client) Generate(ctx context.Context, req *llm.Request, emit func(llm.Event) error) error {
	return c.do(ctx, call{Op: opGenerate, Generate: req}, func(r reply) error {
		if r.Event != nil {
			return emit(*r.Event)
		}
		return nil
	})
}

// Close stops the worker.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	p := c.proc
	c.proc = nil
	c.mu.Unlock()
	if p != nil {
		p.stop()
	}
	return nil
}

func (c *Client) do(ctx context.Context, cl call, onReply func(reply) error) error {
	p, err := c.running(ctx)
	if err != nil {
		return err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", p.socket)
	if err != nil {
		return c.lost(ctx, p, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	line, err := json.Marshal(cl)
	if err != nil {
		return fmt.Errorf("encode worker call: %w", err)
	}
	if _, err := conn.Write(append(line, '\n')); err != nil {
		return c.lost(ctx, p, err)
	}
	dec := json.NewDecoder(bufio.NewReader(conn))
	for {
		var r reply
		if err := dec.Decode(&r); err != nil {
			return c.lost(ctx, p, err)
		}
		if r.Error != nil {
			return r.Error.err()
		}
		if err := onReply(r); err != nil {
			return err
		}
		if r.End {
			return nil
		}
	}
}

// lost explains a broken connection: the caller went away, or the worker died.
func (c *Client) lost(ctx context.Context, p *process, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return p.failure(err)
}

// running returns the live worker, starting one if there is none.
func (c *Client) running(ctx context.Context) (*process, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, engineFailure("the worker for %s is shut down", c.opts.ModelPath)
		}
		if c.proc != nil && !c.proc.hasExited() {
			p := c.proc
			c.mu.Unlock()
			return p, nil
		}
		if st := c.starting; st != nil {
			// Another call is loading the model: wait for it instead of loading twice, without
			// holding the lock (Info, PID and Loaded stay answerable during a long load).
			c.mu.Unlock()
			select {
			case <-st.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if st.err != nil && !errors.Is(st.err, context.Canceled) && !errors.Is(st.err, context.DeadlineExceeded) {
				return nil, st.err
			}
			continue // started, or the starter gave up: look again
		}
		st := &start{done: make(chan struct{})}
		c.starting = st
		c.mu.Unlock()

		p, info, err := startProcess(ctx, c.opts)
		c.mu.Lock()
		c.starting, st.err = nil, err
		if err == nil {
			if c.closed {
				c.mu.Unlock()
				p.stop()
				close(st.done)
				return nil, engineFailure("the worker for %s is shut down", c.opts.ModelPath)
			}
			c.proc, c.info = p, info
		}
		c.mu.Unlock()
		close(st.done)
		return p, err
	}
}

// start is a worker launch in progress; done closes when it ends, with err its outcome.
type start struct {
	done chan struct{}
	err  error
}

func (o Options) args(socket string) []string {
	args := append([]string{}, o.Command[1:]...)
	return append(args,
		"--model", o.ModelPath,
		"--socket", socket,
		"--ctx", strconv.Itoa(o.ContextLength),
		"--parallel", strconv.Itoa(o.Parallel),
		"--threads", strconv.Itoa(o.Threads))
}

func startProcess(ctx context.Context, o Options) (*process, llm.ModelInfo, error) {
	if len(o.Command) == 0 {
		return nil, llm.ModelInfo{}, engineFailure("no worker command configured")
	}
	// A private 0700 directory: only this user can reach the socket.
	dir, err := socketDir(o.SocketDir)
	if err != nil {
		return nil, llm.ModelInfo{}, engineFailure("create worker socket directory: %v", err)
	}
	p := &process{dir: dir, socket: filepath.Join(dir, "w.sock"), exited: make(chan struct{}), log: &tail{max: 16 << 10}}
	p.cmd = exec.Command(o.Command[0], o.args(p.socket)...)
	p.cmd.Env = append(os.Environ(), o.Env...)
	p.cmd.SysProcAttr = workerProcAttr()
	p.cmd.Stderr = p.log
	if o.Log != nil {
		p.cmd.Stderr = io.MultiWriter(p.log, o.Log)
	}
	// The worker's stdin is a pipe only this process writes to: when the app dies, however it
	// dies, the worker reads EOF and exits instead of holding the model in memory.
	if _, err := p.cmd.StdinPipe(); err != nil {
		os.RemoveAll(dir)
		return nil, llm.ModelInfo{}, engineFailure("worker stdin: %v", err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, llm.ModelInfo{}, engineFailure("worker stdout: %v", err)
	}
	if err := p.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, llm.ModelInfo{}, engineFailure("start worker %s: %v", o.Command[0], err)
	}
	go p.wait()

	helloCh := make(chan hello, 1)
	go func() {
		var h hello
		line, err := bufio.NewReader(stdout).ReadBytes('\n')
		if err == nil {
			_ = json.Unmarshal(line, &h) // a garbled hello reads as none: the worker died loading
		}
		helloCh <- h
		_, _ = io.Copy(io.Discard, stdout)
	}()
	timer := time.NewTimer(o.StartTimeout)
	defer timer.Stop()
	select {
	case h := <-helloCh:
		if h.Info != nil && h.Error == "" {
			return p, *h.Info, nil
		}
		p.stop()
		if h.Error != "" {
			return nil, llm.ModelInfo{}, engineFailure("load model %s: %s", o.ModelPath, h.Error)
		}
		return nil, llm.ModelInfo{}, engineFailure("the worker for %s exited while loading (%v); last log: %s", o.ModelPath, p.exitErr, p.log.last())
	case <-timer.C:
		p.stop()
		return nil, llm.ModelInfo{}, engineFailure("the worker for %s did not load within %s", o.ModelPath, o.StartTimeout)
	case <-ctx.Done():
		p.stop()
		return nil, llm.ModelInfo{}, ctx.Err()
	}
}

// process is one running worker.
type process struct {
	cmd     *exec.Cmd
	dir     string
	socket  string
	log     *tail
	exited  chan struct{}
	exitErr error
}

func (p *process) wait() {
	p.exitErr = p.cmd.Wait()
	os.RemoveAll(p.dir)
	close(p.exited)
}

func (p *process) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

func (p *process) stop() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// failure describes a call that broke; if the worker died, it says so with its last log line.
func (p *process) failure(err error) error {
	select {
	case <-p.exited:
	case <-time.After(2 * time.Second):
		return engineFailure("lost the connection to the worker: %v", err)
	}
	msg := "the worker exited during the request"
	if p.exitErr != nil {
		msg += " (" + p.exitErr.Error() + ")"
	}
	if last := p.log.last(); last != "" {
		msg += "; last log: " + last
	}
	return engineFailure("%s; the next request starts a new worker", msg)
}

// tail keeps the end of a stream.
type tail struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(b), nil
}

// last returns the last non-empty line.
func (t *tail) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// launching is the launch in progress, if any (tests).
func (c *Client) launching() *start {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.starting
}

// maxSocketDir keeps "<dir>/w.sock" inside the 108 bytes a unix socket path may have.
const maxSocketDir = 90

// socketDir makes a private (0700) directory for one worker's socket under parent.
func socketDir(parent string) (string, error) {
	if parent != "" && len(parent)+len("/superfluid-worker-0000000000") <= maxSocketDir {
		if err := os.MkdirAll(parent, 0o700); err == nil {
			return os.MkdirTemp(parent, "superfluid-worker-")
		}
	}
	return os.MkdirTemp("", "superfluid-worker-")
}
