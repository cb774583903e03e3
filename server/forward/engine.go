package forward

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

// Config says where a forwarded model is served and how.
type Config struct {
	// URL is the upstream's base URL, with or without its /v1 ("http://10.0.0.5:8000").
	URL string
	// Key, when set, is sent as the upstream's bearer key.
	Key string
	// Model is the served model name: every request reaches the upstream with it, whatever the
	// client named (vLLM and SGLang refuse other names).
	Model string
	// ContextLength is the window when the upstream's /v1/models does not say; 0 is 8192.
	ContextLength int
	// Parallel is how many requests the core hands the upstream at once; 0 is 32 (a batching
	// server takes many; the upstream queues the rest itself).
	Parallel int
	// Embedding, when set, says the upstream model embeds (served on /v1/embeddings) rather
	// than generates.
	Embedding *llm.Embedding
	// HeaderTimeout ends a request whose upstream has not started its reply within it: no
	// headers, or (a stream) no first event, which waits for the prompt's prefill, minutes on a
	// long prompt and a big model; 0 is DefaultHeaderTimeout.
	HeaderTimeout time.Duration
	// IdleTimeout ends a reply whose upstream, once it started, sends nothing for that long (a
	// stalled stream); 0 is DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Instance is this server's instance id, appended to the Via chain of every request sent;
	// an upstream that answers with it is this server, refused by New. "" is
	// ProcessInstance(), the router's own when its Config names none; two servers in one
	// process (tests) name theirs.
	Instance string
	// MustAnswer makes New fail when the upstream does not answer its probe, for a caller that
	// retries (a lane stays unavailable until its upstream is up); otherwise New takes an
	// upstream that is not up yet, and each request reports its own fault.
	MustAnswer bool
	// Client sends the requests; nil is a client without an overall timeout (streams are
	// long), whose transport is http.DefaultTransport.
	Client *http.Client
}

// How long an upstream may take to start its reply (DefaultHeaderTimeout: a prefill of a long
// prompt, a whole non-streamed reply) and then send nothing (DefaultIdleTimeout) before it is
// given up as a 502 upstream_error.
const (
	DefaultHeaderTimeout = 10 * time.Minute
	DefaultIdleTimeout   = 60 * time.Second
)

// Defaults of a Config.
const (
	DefaultContextLength = 8192
	DefaultParallel      = 32
)

// Engine forwards a model's requests to an upstream OpenAI-compatible server: a
// core.RequestEngine.
type Engine struct {
	cfg  Config
	base string        // the URL up to and including /v1, without its user and password
	user *url.Userinfo // the URL's user and password (basic auth), put back on each request
	info llm.ModelInfo
}

// ErrSelf refuses an upstream that is the server making the engine.
var ErrSelf = errors.New("the upstream is this server itself")

// New makes an engine for cfg and probes the upstream once (GET /v1/models): an upstream that
// answers as this very server is refused (ErrSelf, a forwarding loop), and the served model's
// window is read where the upstream lists it (context_length, max_model_len). An upstream
// that does not answer yet is no error (unless cfg.MustAnswer): a supervised server may still
// be starting, and each request reports its own fault; the window is then cfg's.
func New(ctx context.Context, cfg Config) (*Engine, error) {
	if cfg.Model == "" {
		return nil, fmt.Errorf("forward: no served model name for %s", cfg.URL)
	}
	base := strings.TrimRight(cfg.URL, "/")
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("forward: upstream URL %q is not http(s)", cfg.URL)
	}
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.HeaderTimeout <= 0 {
		cfg.HeaderTimeout = DefaultHeaderTimeout
	}
	if cfg.ContextLength <= 0 {
		cfg.ContextLength = DefaultContextLength
	}
	if cfg.Instance == "" {
		cfg.Instance = ProcessInstance()
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = DefaultParallel
	}
	e := &Engine{cfg: cfg, base: base}
	// A password in the URL goes with the requests only: base is quoted in errors clients see.
	if u, err := url.Parse(base); err == nil && u.User != nil {
		e.user, u.User = u.User, nil
		e.base = u.String()
	}
	e.info = llm.ModelInfo{Path: e.base + "#" + cfg.Model, Architecture: "forwarded", ContextLength: cfg.ContextLength,
		TrainContextLength: cfg.ContextLength, Parallel: cfg.Parallel, Runtime: "openai", Embedding: cfg.Embedding}
	window, err := e.probe(ctx)
	if errors.Is(err, ErrSelf) || err != nil && cfg.MustAnswer {
		return nil, err
	}
	if window > 0 {
		e.info.ContextLength, e.info.TrainContextLength = window, window
	}
	return e, nil
}

// probe lists the upstream's models: the served model's window, or ErrSelf.
func (e *Engine) probe(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, min(e.cfg.IdleTimeout, 10*time.Second))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.base+"/models", nil)
	if err != nil {
		return 0, err
	}
	e.header(req)
	resp, err := e.cfg.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if id := resp.Header.Get(InstanceHeader); id != "" && id == e.cfg.Instance {
		return 0, fmt.Errorf("forward: %s: %w (instance %s); a forwarded model must be served elsewhere", e.base, ErrSelf, id)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("forward: %s/models: %s", e.base, resp.Status)
	}
	var list struct {
		Data []struct {
			ID            string `json:"id"`
			ContextLength int    `json:"context_length"`
			MaxModelLen   int    `json:"max_model_len"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&list); err != nil {
		return 0, fmt.Errorf("forward: %s/models: %w", e.base, err)
	}
	for _, m := range list.Data {
		if m.ID == e.cfg.Model {
			return max(m.ContextLength, m.MaxModelLen), nil
		}
	}
	return 0, nil
}

// Info is the forwarded model as the core sees it.
func (e *Engine) Info() llm.ModelInfo { return e.info }

// Capabilities: the upstream renders its own prompts, so it takes tools and reasons as its
// model does; the core passes both on.
func (e *Engine) Capabilities() core.Capabilities {
	return core.Capabilities{Tools: true, NativeTools: true, Thinking: true, ReasoningEffort: true}
}

// header sets what every upstream request carries: the key and the Via chain.
func (e *Engine) header(req *http.Request) {
	if e.user != nil {
		req.URL.User = e.user
	}
	if e.cfg.Key != "" {
		req.Header.Set("Authorization", "Bearer "+e.cfg.Key)
	}
	if via := viaValue(req.Context(), e.cfg.Instance); via != "" {
		req.Header.Set(ViaHeader, via)
	}
}

// post sends body to path and returns the upstream's successful reply, or its refusal as an
// error (upstreamError). The reply's body must be closed.
func (e *Engine) post(ctx context.Context, path string, body any) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.base+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream, application/json")
	e.header(req)
	resp, err := e.cfg.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, unreachable(e.base, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, refusal(e.base, resp)
	}
	return resp, nil
}

// unreachable is the 502 of an upstream that did not answer.
func unreachable(base string, err error) error {
	return &llm.StatusError{Status: http.StatusBadGateway, Code: "upstream_error",
		Message: fmt.Sprintf("the model server %s did not answer: %v", base, err)}
}

// refusal is the error of an upstream's non-2xx reply: a 4xx (and a loop's 508) is passed on
// with its status and message, for the client's request was at fault, but for a 401 or 403
// (the upstream key); anything else is the upstream's own failure. Those are a 502.
func refusal(base string, resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var wire struct {
		Error json.RawMessage `json:"error"`
	}
	message, code := strings.TrimSpace(string(body)), ""
	if json.Unmarshal(body, &wire) == nil && len(wire.Error) > 0 {
		var obj struct {
			Message string `json:"message"`
			Code    any    `json:"code"`
		}
		var s string
		switch {
		case json.Unmarshal(wire.Error, &obj) == nil && obj.Message != "":
			message = obj.Message
			if c, ok := obj.Code.(string); ok {
				code = c
			}
		case json.Unmarshal(wire.Error, &s) == nil && s != "":
			message = s // Ollama's and llama-server's {"error": "..."}
		}
	}
	if message == "" {
		message = resp.Status
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		// The upstream refused this server's key, not the client's: a fault of the lane's
		// settings, which the client cannot mend.
		return &llm.StatusError{Status: http.StatusBadGateway, Code: "upstream_error",
			Message: fmt.Sprintf("the model server %s refused the upstream key: %s: %s", base, resp.Status, message)}
	}
	if resp.StatusCode/100 == 4 || resp.StatusCode == StatusLoopDetected {
		se := &llm.StatusError{Status: resp.StatusCode, Code: code, Message: message}
		if s := resp.Header.Get("Retry-After"); s != "" {
			var secs int
			if _, err := fmt.Sscan(s, &secs); err == nil && secs > 0 {
				se.RetryAfter = time.Duration(secs) * time.Second
			}
		}
		return se
	}
	return &llm.StatusError{Status: http.StatusBadGateway, Code: "upstream_error",
		Message: fmt.Sprintf("the model server %s failed: %s: %s", base, resp.Status, message)}
}

// broken is the 502 of a reply the upstream started but did not finish well.
func broken(base, what string) error {
	return &llm.StatusError{Status: http.StatusBadGateway, Code: "upstream_error",
		Message: fmt.Sprintf("the model server %s %s", base, what)}
}
