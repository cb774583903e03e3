package forward

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/superfluid/superfluid/runtime/llm"
)

// MaxProxyBody bounds the request body Proxy reads to put the served model's name in.
const MaxProxyBody = 64 << 20

// hopHeaders are the headers of one connection (RFC 9110 7.6.1), never relayed, with those
// Proxy sets itself.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Content-Length", "Host", "Authorization", "X-Api-Key",
	"Accept-Encoding", ViaHeader, InstanceHeader}

// Proxy relays r, a request for any route under /v1 of the model server, to upstream's server
// and its reply back to w as is: status, headers and body, each piece flushed as it arrives (an
// SSE stream event by event). A JSON object body's "model" becomes the served model's name;
// the client's key is replaced by the upstream's. The upstream request ends when the client
// goes (r's context), the upstream does not start its reply within the engine's HeaderTimeout,
// or sends nothing for its IdleTimeout after.
//
// A non-nil error means nothing was written to w: the caller renders it (a 502
// upstream_error, or the upstream's 4xx is not an error at all but relayed). Once the reply
// has started, a fault cuts it short and is logged, as a relaying proxy can do nothing else.
func Proxy(w http.ResponseWriter, r *http.Request, upstream *Engine) error {
	e := upstream
	body, err := proxyBody(r, e.cfg.Model)
	if err != nil {
		return err
	}
	ctx, watchdog, cancel := e.watch(r.Context())
	defer cancel(nil)
	defer watchdog.Stop()

	target := e.base + strings.TrimPrefix(r.URL.Path, "/v1")
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	out, err := http.NewRequestWithContext(ctx, r.Method, target, bytes.NewReader(body))
	if err != nil {
		return err
	}
	out.Header = r.Header.Clone()
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	e.header(out)
	resp, err := e.cfg.Client.Do(out)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil {
			return cause
		}
		return unreachable(e.base, err)
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		if !isHop(k) {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		watchdog.started()
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return nil // the client is gone; the deferred cancel ends the upstream request
			}
			_ = rc.Flush()
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			slog.Warn("forward: a relayed reply was cut", "upstream", e.base, "path", r.URL.Path, "err", context.Cause(ctx))
			return nil
		}
	}
}

// isHop reports whether header k is one Proxy never relays.
func isHop(k string) bool {
	for _, h := range hopHeaders {
		if strings.EqualFold(h, k) {
			return true
		}
	}
	return false
}

// proxyBody is r's body with a JSON object's "model", or a multipart form's model field (a
// transcription's), set to model; any other body as is.
func proxyBody(r *http.Request, model string) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxProxyBody+1))
	if err != nil {
		return nil, err
	}
	if len(body) > MaxProxyBody {
		return nil, &llm.StatusError{Status: http.StatusRequestEntityTooLarge, Message: fmt.Sprintf("the request body is larger than %d MiB", MaxProxyBody>>20)}
	}
	if boundary, ok := formBoundary(r.Header.Get("Content-Type")); ok {
		return formWithModel(body, boundary, model), nil
	}
	if !strings.Contains(r.Header.Get("Content-Type"), "json") {
		return body, nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil {
		return body, nil // not an object: the upstream judges it
	}
	if _, ok := obj["model"]; !ok {
		return body, nil
	}
	obj["model"], _ = json.Marshal(model)
	return json.Marshal(obj)
}
