package hf

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Errors callers can test for with errors.Is.
var (
	// ErrUnauthorized reports a 401 or 403 from the Hub.
	ErrUnauthorized = errors.New("repository is gated or private; set HF_TOKEN to a token that has access (and accept the model's terms on huggingface.co if it is gated)")
	// ErrNotFound reports a 404: no such repository, revision or file.
	ErrNotFound = errors.New("not found on Hugging Face; check the OWNER/REPO name and revision")
	// ErrNoMatch reports a reference that matches no GGUF file in the repository.
	ErrNoMatch = errors.New("no matching GGUF file")
	// ErrChecksum reports a download whose sha256 or size differs from the
	// Hub's; the partial file has been removed.
	ErrChecksum = errors.New("downloaded file does not match its checksum; pull again")
	// ErrDiskFull reports a write that failed with ENOSPC.
	ErrDiskFull = errors.New("disk full")
	// ErrBadAnswer reports an endpoint answer that cannot be trusted: a revision that is not
	// a commit id, a file name that would leave the download folder.
	ErrBadAnswer = errors.New("the Hugging Face endpoint sent an answer that is not safe to use")
)

// DefaultEndpoint is the Hub's base URL.
const DefaultEndpoint = "https://huggingface.co"

const (
	defaultStallTimeout = 30 * time.Second
	defaultRetries      = 5
	defaultBackoff      = time.Second
	maxBackoff          = 30 * time.Second
	maxRetryAfter       = 5 * time.Minute
	maxRedirects        = 10
)

// Config configures a Client. Zero fields take the defaults documented on each.
type Config struct {
	Endpoint     string        // base URL, default "https://huggingface.co" (the caller passes HF_ENDPOINT or a setting)
	Token        string        // sent as Authorization: Bearer only to Endpoint's host
	HTTPClient   *http.Client  // default: a client with dial/TLS/header timeouts and no overall timeout
	StallTimeout time.Duration // no body bytes for this long: treat as a stall and retry; default 30s
	// Retries is how many attempts may follow a failed one (5xx, 429,
	// connection resets, stalls) without any byte having arrived in between;
	// an attempt that made progress starts the count again. Default 5;
	// negative means none.
	Retries int
	// Backoff is the first wait between attempts, doubled each time and capped
	// at 30s; a Retry-After on 429/503 replaces it. Default 1s.
	Backoff time.Duration
	// LockDir holds the locks that keep two processes from writing one download (made 0700;
	// the app passes <models>/.locks). Default: a .locks folder beside each download.
	LockDir string
}

// Client resolves and downloads models from one Hub endpoint. It is safe for
// concurrent use.
type Client struct {
	endpoint     string // without trailing slash
	host         string // endpoint's host[:port], lower case
	token        string
	hc           *http.Client // a copy of the configured client that never follows redirects
	stallTimeout time.Duration
	retries      int
	backoff      time.Duration
	lockDir      string // "" : a .locks folder beside each download

	// openPartial opens (creating) a .partial file for reading and writing;
	// tests swap it to simulate a full disk.
	openPartial func(name string) (partialFile, error)
	// syncDir makes a rename into a folder durable; tests swap it to watch the order.
	syncDir func(dir string) error

	mu      sync.Mutex
	flights map[string]*flight // in-progress downloads by final path
}

// New returns a Client for cfg.
func New(cfg Config) *Client {
	c := &Client{
		endpoint:     strings.TrimRight(cfg.Endpoint, "/"),
		token:        cfg.Token,
		stallTimeout: cfg.StallTimeout,
		retries:      cfg.Retries,
		backoff:      cfg.Backoff,
		lockDir:      cfg.LockDir,
		openPartial:  openPartialFile,
		syncDir:      syncDirectory,
		flights:      make(map[string]*flight),
	}
	if c.endpoint == "" {
		c.endpoint = DefaultEndpoint
	}
	if u, err := url.Parse(c.endpoint); err == nil {
		c.host = strings.ToLower(u.Host)
	}
	if c.stallTimeout <= 0 {
		c.stallTimeout = defaultStallTimeout
	}
	if c.retries == 0 {
		c.retries = defaultRetries
	} else if c.retries < 0 {
		c.retries = 0
	}
	if c.backoff <= 0 {
		c.backoff = defaultBackoff
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = defaultHTTPClient()
	}
	cp := *hc
	cp.Timeout = 0 // the stall watchdog bounds each attempt; downloads can take hours
	cp.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.hc = &cp
	return c
}

// defaultHTTPClient returns a client with connection-level timeouts only.
func defaultHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   20 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
		ExpectContinueTimeout: time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   4,
		ForceAttemptHTTP2:     true,
	}}
}

// attempt is one HTTP exchange (redirects followed) under a stall watchdog.
type attempt struct {
	resp    *http.Response
	headers []http.Header // headers of each redirect response, in order
	stalled atomic.Bool
	timer   *time.Timer
	cancel  context.CancelFunc
	stall   time.Duration
}

// Read reads the response body, re-arming the stall watchdog on progress.
func (a *attempt) Read(p []byte) (int, error) {
	n, err := a.resp.Body.Read(p)
	if n > 0 {
		a.timer.Reset(a.stall)
	}
	return n, err
}

// Close closes the body and stops the watchdog.
func (a *attempt) Close() error {
	a.timer.Stop()
	err := a.resp.Body.Close()
	a.cancel()
	return err
}

// header returns the first value of key among the redirect responses and the
// final response.
func (a *attempt) header(key string) string {
	for _, h := range a.headers {
		if v := h.Get(key); v != "" {
			return v
		}
	}
	return a.resp.Header.Get(key)
}

// do sends one request, following up to maxRedirects redirects when follow
// is set, and attaching the token only to requests for the endpoint's host.
// The returned attempt must be closed. A stall (no response or no body bytes
// for the stall timeout) cancels the attempt.
func (c *Client) do(ctx context.Context, method, rawURL string, hdr http.Header, follow bool) (*attempt, error) {
	actx, cancel := context.WithCancel(ctx)
	a := &attempt{cancel: cancel, stall: c.stallTimeout}
	a.timer = time.AfterFunc(c.stallTimeout, func() {
		a.stalled.Store(true)
		cancel()
	})
	fail := func(err error) (*attempt, error) {
		a.timer.Stop()
		cancel()
		if a.stalled.Load() && ctx.Err() == nil {
			return nil, &retryableError{err: fmt.Errorf("no response for %v: %w", c.stallTimeout, errStall)}
		}
		return nil, err
	}
	u := rawURL
	for hop := 0; ; hop++ {
		req, err := http.NewRequestWithContext(actx, method, u, nil)
		if err != nil {
			return fail(fmt.Errorf("build request: %w", err))
		}
		for k, v := range hdr {
			req.Header[k] = v
		}
		if c.token != "" && strings.EqualFold(req.URL.Host, c.host) {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		req.Header.Set("User-Agent", "superfluid")
		resp, err := c.hc.Do(req)
		if err != nil {
			return fail(classifyNetErr(err))
		}
		loc := resp.Header.Get("Location")
		if !follow || !isRedirect(resp.StatusCode) || loc == "" {
			a.resp = resp
			return a, nil
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		a.headers = append(a.headers, resp.Header)
		if hop >= maxRedirects {
			return fail(fmt.Errorf("%s: more than %d redirects", rawURL, maxRedirects))
		}
		next, err := req.URL.Parse(loc)
		if err != nil {
			return fail(fmt.Errorf("bad redirect location %q: %w", loc, err))
		}
		u = next.String()
	}
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// errStall marks an attempt that received nothing for the stall timeout.
var errStall = errors.New("download stalled")

// retryableError marks an error worth another attempt.
type retryableError struct {
	err        error
	retryAfter time.Duration // server-requested wait, 0 when none
}

func (e *retryableError) Error() string { return e.err.Error() }
func (e *retryableError) Unwrap() error { return e.err }

// classifyNetErr marks transport errors that another attempt may cure.
// Certificate and name-resolution failures are not retried.
func classifyNetErr(err error) error {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var authErr x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound,
		errors.As(err, &certErr), errors.As(err, &authErr), errors.As(err, &hostErr):
		return err
	}
	return &retryableError{err: err}
}

// statusError turns a non-success response into an error: ErrUnauthorized
// for 401/403, ErrNotFound for 404, retryable for 429 and 5xx. It reads a
// little of the body for the server's message.
func statusError(what string, resp *http.Response) error {
	msg := serverMessage(resp.Body)
	detail := ""
	if msg != "" {
		detail = " (server said: " + msg + ")"
	}
	code := resp.StatusCode
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return fmt.Errorf("%s: %s%s: %w", what, resp.Status, detail, ErrUnauthorized)
	case code == http.StatusNotFound:
		return fmt.Errorf("%s: %s%s: %w", what, resp.Status, detail, ErrNotFound)
	case code == http.StatusTooManyRequests || code >= 500:
		return &retryableError{
			err:        fmt.Errorf("%s: %s%s", what, resp.Status, detail),
			retryAfter: parseRetryAfter(resp.Header.Get("Retry-After")),
		}
	}
	return fmt.Errorf("%s: unexpected %s%s", what, resp.Status, detail)
}

// serverMessage returns the Hub's {"error": "..."} text, or a short plain
// body, or "".
func serverMessage(body io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(body, 4<<10))
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error != "" {
		return e.Error
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 200 || strings.ContainsAny(s, "<{") {
		return ""
	}
	return s
}

// parseRetryAfter parses a Retry-After header (seconds or an HTTP date).
func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.Atoi(v); err == nil {
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = time.Until(t)
	}
	if d < 0 {
		return 0
	}
	return min(d, maxRetryAfter)
}

// retrier counts attempts and sleeps between them.
type retrier struct {
	c     *Client
	tries int // failed attempts since the last progress
}

// wait decides whether err deserves another attempt and, if so, sleeps the
// backoff. It returns err itself when not retrying, or ctx.Err() when ctx
// ends while waiting.
func (r *retrier) wait(ctx context.Context, err error) error {
	var re *retryableError
	if !errors.As(err, &re) {
		return err
	}
	if r.tries >= r.c.retries {
		return fmt.Errorf("gave up after %d attempts: %w", r.tries+1, err)
	}
	d := r.c.backoff << r.tries
	if d > maxBackoff || d <= 0 {
		d = maxBackoff
	}
	if re.retryAfter > 0 {
		d = re.retryAfter
	}
	r.tries++
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// progressed resets the count after an attempt that moved bytes.
func (r *retrier) progressed() { r.tries = 0 }
