package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/superfluid/superfluid/runtime/llm"
)

// Options say how to start a worker for one model.
type Options struct {
	// Command is the worker program and its leading arguments, e.g. {"/usr/bin/superfluid", "worker"}.
	Command []string
	// BaseEnv is the environment the worker inherits; nil: this process's. Env is added to it.
	// Hugging Face variables (HF_*, HUGGING_FACE_*) are dropped from both: a worker parses
	// untrusted model files and has no use for the user's Hub token.
	BaseEnv, Env  []string
	ModelPath     string
	ContextLength int
	Parallel      int
	Threads       int
	// VocabOnly loads only the model's vocabulary (the worker gets --vocab-only): Tokenize
	// works at a fraction of the memory, Generate fails.
	VocabOnly bool
	// GPULayers and Runtime offload layers to the devices of the runtime in Env (see
	// llamacpp.Options); 0 keeps the model on the CPU.
	GPULayers int
	Runtime   string
	// Speculative, DraftTokens, DraftModelPath, KVDir, KVDiskMax and FlashAttention are the
	// engine's (see llamacpp.Options); zero values leave the worker's defaults.
	Speculative    string
	DraftTokens    int
	DraftModelPath string
	KVDir          string
	KVDiskMax      int64
	FlashAttention string
	// ProjectorPath is the model's multimodal projector (mmproj GGUF), "" for none: the worker
	// gets --mmproj and takes images or audio (llamacpp.Options.ProjectorPath).
	ProjectorPath string
	// Log receives the worker's stderr (llama.cpp's log); nil discards it.
	Log io.Writer
	// StartTimeout bounds loading the model; 0 means 5 minutes.
	StartTimeout time.Duration
	// PingInterval is how often the client checks that its worker still answers; 0 means 10s.
	PingInterval time.Duration
	// PingTimeout is how long a worker may take to answer a ping before it is killed as hung;
	// 0 means 5s.
	PingTimeout time.Duration
	// SocketDir holds the workers' private socket directories (the data dir's run/); "" or a
	// path too long for a unix socket falls back to the system temp dir.
	SocketDir string
}

// replyTimeout bounds the calls whose reply is small and prompt (tokenize, slots). A
// generation streams for as long as it needs; the ping tells a hung worker from a busy one.
const replyTimeout = 30 * time.Second

// fatalExitGrace is how long a worker that reported a fatal engine failure gets to exit.
const fatalExitGrace = 5 * time.Second

// Client is the app's handle on a worker process. It implements llm.Engine, starts a worker on
// the first call, starts a new one on the next call after one has died (or was found hung, or
// unloaded), and stops it for good on Close.
type Client struct {
	opts Options
	// callTimeout is replyTimeout; tests shorten it.
	callTimeout time.Duration
	calls       atomic.Int64

	mu        sync.Mutex
	proc      *process
	info      llm.ModelInfo
	closed    bool
	starting  *start        // a launch in progress, or nil
	unloading chan struct{} // closed when the Unload in progress ends; nil when none
	// retiring counts workers an Unload stopped waiting for while they save their lanes;
	// Close waits for them.
	retiring sync.WaitGroup
}

// NewClient returns a client; the worker starts on Start or the first call.
func NewClient(opts Options) *Client {
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 5 * time.Minute
	}
	if opts.PingInterval <= 0 {
		opts.PingInterval = 10 * time.Second
	}
	if opts.PingTimeout <= 0 {
		opts.PingTimeout = 5 * time.Second
	}
	return &Client{opts: opts, callTimeout: replyTimeout}
}

// Start makes sure a worker is running with the model loaded. If ctx ends first, Start
// returns its error but the load goes on, for the next caller to find.
func (c *Client) Start(ctx context.Context) error {
	p, err := c.acquire(ctx)
	if err != nil {
		return err
	}
	c.release(p)
	return nil
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

// InFlight is the number of calls (Generate, Tokenize, Slots) in progress now, whether running
// on the worker or waiting for one to load.
func (c *Client) InFlight() int { return int(c.calls.Load()) }

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

// ReleaseAdapter asks the worker to free the LoRA adapter at path once no generation runs
// with it (llm.AdapterReleaser). A worker that is not running holds no adapters: none is
// started for this.
func (c *Client) ReleaseAdapter(ctx context.Context, path string) error {
	if !c.Loaded() {
		return nil
	}
	return c.do(ctx, call{Op: opReleaseAdapter, Path: path}, func(reply) error { return nil })
}

// Embed asks the worker for the vectors of req's inputs (see llm.Embedder).
func (c *Client) Embed(ctx context.Context, req *llm.EmbedRequest) (*llm.EmbedResult, error) {
	var res *llm.EmbedResult
	err := c.do(ctx, call{Op: opEmbed, Embed: req}, func(r reply) error {
		res = r.Embed
		return nil
	})
	if err == nil && res == nil {
		err = engineFailure("the worker answered the embed call without vectors")
	}
	return res, err
}

// Generate runs one generation in the worker.
func (c *Client) Generate(ctx context.Context, req *llm.Request, emit func(llm.Event) error) error {
	return c.do(ctx, call{Op: opGenerate, Generate: req}, func(r reply) error {
		if r.Event != nil {
			restoreTokens(r.Event.Logprobs)
			return emit(*r.Event)
		}
		return nil
	})
}

// restoreTokens undoes what JSON does to a token that is part of a UTF-8 character (a
// byte-fallback token): encoding/json writes its invalid bytes as U+FFFD, so Token arrives
// changed while Bytes (base64) arrives exact. An engine's Token is its Bytes as text, so the
// text is put back from the bytes, and a logprob reads the same in the app as in the worker.
func restoreTokens(lps []llm.TokenLogprob) {
	for i := range lps {
		lp := &lps[i]
		if !utf8.Valid(lp.Bytes) {
			lp.Token = string(lp.Bytes)
		}
		for k := range lp.Top {
			if alt := &lp.Top[k]; !utf8.Valid(alt.Bytes) {
				alt.Token = string(alt.Bytes)
			}
		}
	}
}

// Unload stops the worker and frees its memory, but the client stays usable: the next call
// (or Start) starts a new worker. Unload first lets the calls in flight finish; calls made
// meanwhile wait, and then run on the new worker. If ctx ends first, Unload kills the worker
// anyway and returns ctx's error; the calls it cuts short fail with llm.ErrEngineFailure, but
// not ErrWorkerExited, which would blame their prompts. A load in progress is called off.
func (c *Client) Unload(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	if u := c.unloading; u != nil {
		c.mu.Unlock()
		select {
		case <-u:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	u := make(chan struct{})
	c.unloading = u
	st := c.starting
	if st != nil {
		st.cancelled = true
		st.cancel()
	}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.unloading = nil
		c.mu.Unlock()
		close(u)
	}()

	if st != nil {
		// A called-off launch kills its process at once; wait so that none outlives Unload.
		select {
		case <-st.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	c.mu.Lock()
	p := c.proc
	var idle chan struct{}
	if p != nil && p.calls > 0 {
		p.idle = make(chan struct{})
		idle = p.idle
	}
	c.mu.Unlock()
	if p == nil {
		return nil
	}
	var err error
	if idle != nil {
		select {
		case <-idle:
		case <-p.exited: // died, or was killed (hung, or Close): its calls fail on their own
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	// Idle means no call on this worker: calls waiting for the unload (counted in c.calls) run
	// on the next one and must not cost this one its save.
	c.mu.Lock()
	idleNow := p.calls == 0
	c.mu.Unlock()
	p.retire(ctx, "the worker was unloaded before the request finished", idleNow, &c.retiring)
	c.mu.Lock()
	if c.proc == p {
		c.proc = nil
	}
	c.mu.Unlock()
	return err
}

// Close stops the worker for good: later calls fail with llm.ErrEngineFailure.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	p := c.proc
	c.proc = nil
	st := c.starting
	if st != nil {
		st.cancelled = true
		st.cancel()
	}
	idleNow := p == nil || p.calls == 0
	c.mu.Unlock()
	if p != nil {
		p.retire(context.Background(), "the worker was shut down during the request", idleNow, &c.retiring)
	}
	if st != nil {
		<-st.done // a called-off launch kills its process at once; none outlives Close
	}
	c.retiring.Wait() // a worker an Unload left saving its lanes (retire)
	return nil
}

func (c *Client) do(ctx context.Context, cl call, onReply func(reply) error) error {
	c.calls.Add(1)
	defer c.calls.Add(-1)
	for retried := false; ; retried = true {
		p, err := c.acquire(ctx)
		if err != nil {
			return err
		}
		again, err := c.exchange(ctx, p, cl, onReply)
		c.release(p)
		if !again || retried {
			return err
		}
	}
}

// exchange runs one call on p. It reports again when the call never reached the worker
// because the worker had just died, so that it can go to a new one.
func (c *Client) exchange(ctx context.Context, p *process, cl call, onReply func(reply) error) (again bool, err error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", p.socket)
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if p.waitExit(exitGrace) {
			return true, p.exitFailure()
		}
		return false, engineFailure("connect to the worker: %v", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	timeout := time.Duration(0)
	if cl.Op == opTokenize || cl.Op == opSlots {
		timeout = c.callTimeout
		if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
			return false, engineFailure("set the worker call deadline: %v", err)
		}
	}

	line, err := json.Marshal(cl)
	if err != nil {
		var uv *json.UnsupportedValueError
		if errors.As(err, &uv) {
			// A NaN or infinite number (a logit_bias value, a temperature): the engine would
			// refuse it too, had JSON a way to carry it.
			return false, fmt.Errorf("%w: the request holds %s, which is not a finite number; give finite values", llm.ErrInvalidInput, uv.Str)
		}
		return false, fmt.Errorf("encode worker call: %w", err)
	}
	if _, err := conn.Write(append(line, '\n')); err != nil {
		return false, c.lost(ctx, p, err)
	}
	dec := json.NewDecoder(bufio.NewReader(conn))
	for {
		var r reply
		if err := dec.Decode(&r); err != nil {
			var ne net.Error
			if ctx.Err() == nil && errors.As(err, &ne) && ne.Timeout() && !p.hasExited() {
				return false, engineFailure("the worker did not answer the %s call within %s", cl.Op, timeout)
			}
			return false, c.lost(ctx, p, err)
		}
		if r.Error != nil {
			if r.Error.Kind == kindFatal {
				return false, c.fatal(p, r.Error)
			}
			return false, r.Error.err()
		}
		if err := onReply(r); err != nil {
			return false, err
		}
		if r.End {
			return false, nil
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

// fatal handles a worker whose engine broke beyond repair: it is exiting, and the call returns
// once it has (or was made to), so that the next call starts a new worker rather than finding
// this one on its way out.
func (c *Client) fatal(p *process, w *wireError) error {
	if !p.waitExit(fatalExitGrace) {
		p.kill("the worker's engine failed and it did not exit", true)
	}
	msg := strings.TrimPrefix(w.Message, llm.ErrEngineFailure.Error()+": ")
	return workerFailure(ErrWorkerExited, "%s; the worker exited and the next request starts a new one", msg)
}

// acquire returns the live worker, starting one if there is none, and counts the caller as
// one of its calls until release.
func (c *Client) acquire(ctx context.Context) (*process, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err // a caller that is gone starts no worker
		}
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, engineFailure("the worker for %s is shut down", c.opts.ModelPath)
		}
		if u := c.unloading; u != nil {
			// Not on the worker being unloaded: wait, then run on the next one.
			c.mu.Unlock()
			select {
			case <-u:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if p := c.proc; p != nil && !p.hasExited() {
			p.calls++
			c.mu.Unlock()
			return p, nil
		}
		// Another call may be loading the model already: wait for it instead of loading twice,
		// without holding the lock (Info, PID and Loaded stay answerable during a long load).
		st := c.starting
		if st == nil {
			st = c.launch()
		}
		c.mu.Unlock()
		select {
		case <-st.done:
		case <-ctx.Done():
			return nil, ctx.Err() // the launch goes on without this caller
		}
		switch {
		case st.cancelled:
			continue // by Unload (then wait for it) or Close
		case st.err != nil:
			return nil, st.err
		case st.proc.hasExited() && !st.proc.killed():
			// Died on its own right after loading: report it rather than loop on launching.
			return nil, st.proc.exitFailure()
		}
	}
}

// release ends a call's use of p, waking an Unload waiting for it to go idle.
func (c *Client) release(p *process) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p.calls--
	if p.calls == 0 && p.idle != nil {
		close(p.idle)
		p.idle = nil
	}
}

// start is a worker launch in progress; done closes when it ends, with err its outcome.
type start struct {
	done   chan struct{}
	cancel context.CancelFunc
	// cancelled says Unload or Close called the launch off; set under the Client's mu.
	cancelled bool
	proc      *process
	err       error
}

// launch starts a worker on a context the client owns, so that no caller's going away stops
// a load that others (or the next call) will want. Call it with c.mu held.
func (c *Client) launch() *start {
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.StartTimeout)
	st := &start{done: make(chan struct{}), cancel: cancel}
	c.starting = st
	opts := c.opts
	go func() {
		defer close(st.done)
		defer cancel()
		p, info, err := startProcess(ctx, opts)
		c.mu.Lock()
		c.starting = nil
		discard := err == nil && (c.closed || st.cancelled)
		switch {
		case discard:
			err = errLaunchCancelled
		case err == nil:
			c.proc, c.info = p, info
			go p.watch(opts.PingInterval, opts.PingTimeout)
		}
		st.proc, st.err = p, err
		c.mu.Unlock()
		if discard {
			p.stop()
		}
	}()
	return st
}

// launching is the launch in progress, if any (tests).
func (c *Client) launching() *start {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.starting
}

func (o Options) args(socket string) []string {
	args := append([]string{}, o.Command[1:]...)
	args = append(args,
		"--model", o.ModelPath,
		"--socket", socket,
		"--ctx", strconv.Itoa(o.ContextLength),
		"--parallel", strconv.Itoa(o.Parallel),
		"--threads", strconv.Itoa(o.Threads))
	if o.VocabOnly {
		args = append(args, "--vocab-only")
	}
	if o.GPULayers > 0 {
		args = append(args, "--gpu-layers", strconv.Itoa(o.GPULayers), "--runtime", o.Runtime)
	}
	for _, f := range []struct{ flag, value string }{
		{"--speculative", o.Speculative}, {"--draft-model", o.DraftModelPath}, {"--kv-dir", o.KVDir}, {"--flash-attn", o.FlashAttention},
		{"--mmproj", o.ProjectorPath},
	} {
		if f.value != "" {
			args = append(args, f.flag, f.value)
		}
	}
	if o.DraftTokens > 0 {
		args = append(args, "--draft-tokens", strconv.Itoa(o.DraftTokens))
	}
	if o.KVDiskMax > 0 {
		args = append(args, "--kv-disk-max", strconv.FormatInt(o.KVDiskMax, 10))
	}
	return args
}
