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
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
)

// errLaunchCancelled ends a launch that Unload or Close called off; its waiters look again.
var errLaunchCancelled = engineFailure("the worker launch was called off (unloaded or shut down)")

// environ is the worker's environment: the inherited one plus Env, without the variables a
// process that parses untrusted files must not see (the Hub token above all).
func (o Options) environ() []string {
	base := o.BaseEnv
	if base == nil {
		base = os.Environ()
	}
	out := make([]string, 0, len(base)+len(o.Env))
	for _, kv := range append(slices.Clip(base), o.Env...) {
		key, _, _ := strings.Cut(kv, "=")
		if upper := strings.ToUpper(key); strings.HasPrefix(upper, "HF_") || strings.HasPrefix(upper, "HUGGING_FACE_") ||
			upper == "SUPERFLUID_API_KEY" { // the server's admin key, when given this way
			continue
		}
		out = append(out, kv)
	}
	return out
}

// startProcess launches a worker and waits for its hello. ctx is the launch's own (bounded by
// StartTimeout, cancelled by Unload and Close), never a caller's.
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
	p.cmd.Env = o.environ()
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
	select {
	case h := <-helloCh:
		if h.Info != nil && h.Error == "" {
			return p, *h.Info, nil
		}
		p.stop()
		if h.Error != "" && h.Kind == kindInvalidInput {
			return nil, llm.ModelInfo{}, &failure{kind: ErrLoad, msg: h.Error, input: true}
		}
		if h.Error != "" {
			return nil, llm.ModelInfo{}, workerFailure(ErrLoad, "load model %s: %s", o.ModelPath, h.Error)
		}
		return nil, llm.ModelInfo{}, workerFailure(ErrWorkerExited, "the worker for %s exited while loading (%v); last log: %s", o.ModelPath, p.exitErr, p.log.last())
	case <-ctx.Done():
		p.stop()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, llm.ModelInfo{}, engineFailure("the worker for %s did not load within %s", o.ModelPath, o.StartTimeout)
		}
		return nil, llm.ModelInfo{}, errLaunchCancelled
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

	// calls is the number of calls using this worker and idle, when an Unload waits for them,
	// is closed as calls reaches 0; both are guarded by the Client's mu.
	calls int
	idle  chan struct{}

	mu     sync.Mutex
	reason string // why the client killed the worker, told to the calls that broke
	// crash says the calls broke because the worker failed (hung, its engine broken): they
	// match ErrWorkerExited, as when it dies on its own. A worker stopped by Unload or Close
	// did not fail, and its calls get a plain engine failure: no prompt is to blame.
	crash bool
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

// waitExit reports whether the worker exits within d.
func (p *process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

func (p *process) stop() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// kill stops the worker on purpose; reason becomes the error of the calls it breaks (see
// crash), unless the worker had already died on its own.
func (p *process) kill(reason string, crash bool) {
	p.mu.Lock()
	if p.reason == "" && !p.hasExited() {
		p.reason, p.crash = reason, crash
	}
	p.mu.Unlock()
	p.stop()
}

// retire stops the worker on purpose, as kill does; an idle worker is asked first (SIGTERM)
// and given stopGrace to exit, so that it closes its engine, which saves its lanes' prefixes
// to the disk cache. When ctx ends first, retire returns and the grace runs out on its own
// goroutine, counted in pending: the caller's deadline holds, and the save is not cut short by
// it. Whoever ends this process waits for pending (Client.Close does): the worker dies with
// the app (Pdeathsig), so leaving early would lose the save.
func (p *process) retire(ctx context.Context, reason string, idle bool, pending *sync.WaitGroup) {
	p.mu.Lock()
	if p.reason == "" && !p.hasExited() {
		p.reason, p.crash = reason, false
	}
	p.mu.Unlock()
	if !idle || p.cmd.Process.Signal(syscall.SIGTERM) != nil {
		p.stop()
		return
	}
	grace := time.NewTimer(stopGrace)
	defer grace.Stop()
	select {
	case <-p.exited:
	case <-grace.C:
	case <-ctx.Done():
		pending.Go(func() {
			p.waitExit(stopGrace)
			p.stop()
		})
		return
	}
	p.stop()
}

// stopGrace is how long an idle worker asked to exit may take: saving four lanes of a 1B model's
// full windows writes some hundred MB.
const stopGrace = 10 * time.Second

// killed reports whether the client killed the worker on purpose (unloaded, hung, shut down).
func (p *process) killed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reason != ""
}

// exitGrace is how long a broken connection waits for the worker's exit to explain it.
const exitGrace = 2 * time.Second

// failure describes a call that broke; if the worker died, it says so with its last log line.
func (p *process) failure(err error) error {
	if !p.waitExit(exitGrace) {
		return engineFailure("lost the connection to the worker: %v", err)
	}
	return p.exitFailure()
}

// exitFailure explains the worker's exit to a call it broke.
func (p *process) exitFailure() error {
	p.mu.Lock()
	reason, crash := p.reason, p.crash
	p.mu.Unlock()
	if reason != "" && !crash {
		return engineFailure("%s", reason)
	}
	if reason == "" {
		reason = "the worker exited during the request"
		if p.exitErr != nil {
			reason += " (" + p.exitErr.Error() + ")"
		}
		if last := p.log.last(); last != "" {
			reason += "; last log: " + last
		}
	}
	return workerFailure(ErrWorkerExited, "%s; the next request starts a new worker", reason)
}

// ping reports whether the worker answers a ping within timeout.
func (p *process) ping(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", p.socket)
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	if err := conn.SetDeadline(deadline); err != nil {
		return err
	}
	if _, err := conn.Write([]byte(`{"op":"` + opPing + `"}` + "\n")); err != nil {
		return err
	}
	// Any reply counts: even "unknown call" from an older worker shows it is scheduling.
	var r reply
	return json.NewDecoder(conn).Decode(&r)
}

// watch pings the worker every interval while it runs and kills it when it does not answer in
// time: a stopped or deadlocked worker would otherwise hold its calls (and the model) forever.
func (p *process) watch(interval, timeout time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-p.exited:
			return
		case <-t.C:
		}
		if err := p.ping(timeout); err != nil {
			// A worker on its way out (its engine failed) refuses pings before it exits: give
			// it as long again to exit on its own before calling it hung.
			if p.waitExit(timeout) {
				return
			}
			p.kill(fmt.Sprintf("the worker stopped answering (no reply to a ping within %s: %v) and was killed", timeout, err), true)
			return
		}
	}
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
