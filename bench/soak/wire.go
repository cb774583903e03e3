package soak

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// outcome is what one request came to, as the tally counts it.
type outcome struct {
	status int
	// failure is a transport error, an error reply, or an error frame in a stream that began:
	// the server refused or failed the request.
	failure string
	// malformed says what is wrong with a reply that does not follow its dialect.
	malformed string
	// disconnected reports whether the client hung up mid-stream on purpose.
	disconnected bool
	// transport reports whether the failure is a broken connection, never an answer.
	transport bool
	// from, when set, is when what the outcome reports began (a batch: when it was created),
	// for telling whether chaos overlapped it.
	from time.Time
	// answered reports whether the server began a 200 answer: the request reached the core,
	// which records it (GET /v1/usage counts it).
	answered bool
}

// broken is the outcome of a request whose connection failed.
func broken(err error) outcome {
	return outcome{failure: err.Error(), transport: true}
}

func malformed(format string, args ...any) outcome {
	return outcome{malformed: fmt.Sprintf(format, args...)}
}

// postJSON posts body to path and decodes a 200 reply strictly into a T that check accepts;
// done is false with the outcome to return when the reply is anything else (what names the
// reply in a malformed outcome).
func postJSON[T any](ctx context.Context, s *soak, d dialect, path, what string, body any, check func(*T) error) (v *T, raw []byte, o outcome, done bool) {
	c, o, ok := s.send(ctx, d, http.MethodPost, path, body, false)
	if !ok {
		return nil, nil, o, false
	}
	v = new(T)
	if err := strictJSON(c.body, v); err != nil {
		return nil, nil, malformed("%s: %v: %s", what, err, clip(c.body)), false
	}
	if err := check(v); err != nil {
		return nil, nil, malformed("%s: %v: %s", what, err, clip(c.body)), false
	}
	return v, c.body, outcome{status: http.StatusOK, answered: true}, true
}

// send is do against the server; ok is false with the outcome to return when the request did
// not get through or was answered with a status other than 200 (read in d's error shape).
func (s *soak) send(ctx context.Context, d dialect, method, path string, body any, stream bool) (c *call, o outcome, ok bool) {
	c, err := do(ctx, s.http, method, s.url+path, body, stream)
	if err != nil {
		return nil, broken(err), false
	}
	if c.res.StatusCode != http.StatusOK {
		return nil, errorReply(d, c.res.StatusCode, c.body), false
	}
	return c, outcome{}, true
}

// call is one HTTP request's reply: the status and, unless streamed, the whole body.
type call struct {
	res  *http.Response
	body []byte
}

// do sends a JSON body (nil: none) and reads the whole reply unless stream is set, in which
// case the caller reads and closes res.Body.
func do(ctx context.Context, c *http.Client, method, url string, body any, stream bool) (*call, error) {
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	cl := &call{res: res}
	if stream && res.StatusCode == http.StatusOK {
		return cl, nil
	}
	defer res.Body.Close()
	cl.body, err = io.ReadAll(res.Body)
	return cl, err
}

// dialect names an error shape.
type dialect int

const (
	openAI dialect = iota
	anthropicDialect
	ollamaDialect
)

// errorReply checks that a non-200 body has the dialect's error shape and returns the
// outcome: a failure with the message, or malformed.
func errorReply(d dialect, status int, body []byte) outcome {
	o := outcome{status: status}
	msg, err := errorMessage(d, body)
	if err != nil {
		o.malformed = fmt.Sprintf("status %d with a body that is not the error shape (%v): %s", status, err, clip(body))
		return o
	}
	o.failure = fmt.Sprintf("status %d: %s", status, msg)
	return o
}

// errorMessage decodes an error body of the dialect: OpenAI's {"error": {"message", "type"}},
// Anthropic's {"type": "error", "error": {"type", "message"}}, Ollama's {"error": "..."}.
func errorMessage(d dialect, body []byte) (string, error) {
	switch d {
	case ollamaDialect:
		var e struct {
			Error *string `json:"error"`
		}
		if err := strictJSON(body, &e); err != nil {
			return "", err
		}
		if e.Error == nil || *e.Error == "" {
			return "", errors.New(`no "error" string`)
		}
		return *e.Error, nil
	case anthropicDialect:
		var e struct {
			Type  *string `json:"type"`
			Error *struct {
				Type    *string `json:"type"`
				Message *string `json:"message"`
			} `json:"error"`
		}
		if err := strictJSON(body, &e); err != nil {
			return "", err
		}
		if e.Type == nil || *e.Type != "error" || e.Error == nil || e.Error.Type == nil || e.Error.Message == nil || *e.Error.Message == "" {
			return "", errors.New(`not {"type": "error", "error": {"type", "message"}}`)
		}
		return *e.Error.Type + ": " + *e.Error.Message, nil
	default:
		var e struct {
			Error *struct {
				Message *string `json:"message"`
				Type    *string `json:"type"`
			} `json:"error"`
		}
		if err := strictJSON(body, &e); err != nil {
			return "", err
		}
		if e.Error == nil || e.Error.Message == nil || *e.Error.Message == "" || e.Error.Type == nil {
			return "", errors.New(`not {"error": {"message", "type"}}`)
		}
		return *e.Error.Message, nil
	}
}

// strictJSON decodes exactly one JSON value (leading whitespace allowed: --nonstream-keepalive
// pads with spaces) into v, refusing trailing data.
func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	var rest json.RawMessage
	if err := dec.Decode(&rest); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// clip shortens a body for a message.
func clip(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// sseEvent is one server-sent event.
type sseEvent struct{ name, data string }

// errStopReading is what an event handler returns to stop reading (the client hangs up).
var errStopReading = errors.New("stop reading")

// readSSE reads server-sent events, calling fn for each; comments (keep-alives) are skipped.
// A stream that ends inside an event is an error.
func readSSE(r io.Reader, fn func(sseEvent) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var ev sseEvent
	var data []string
	pending := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if pending {
				ev.data = strings.Join(data, "\n")
				if err := fn(ev); err != nil {
					return err
				}
			}
			ev, data, pending = sseEvent{}, nil, false
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event:"):
			ev.name, pending = strings.TrimSpace(strings.TrimPrefix(line, "event:")), true
		case strings.HasPrefix(line, "data:"):
			data, pending = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")), true
		default:
			return fmt.Errorf("a line that is not server-sent events: %q", clip([]byte(line)))
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if pending {
		return errors.New("the stream ended inside an event")
	}
	return nil
}

// readNDJSON reads newline-delimited JSON, calling fn with each line.
func readNDJSON(r io.Reader, fn func([]byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := fn(line); err != nil {
			return err
		}
	}
	return sc.Err()
}

// streamEnd turns the end of reading a stream into an outcome: a hang-up of ours is a
// disconnect; a read error is a failure (the connection broke); a stream that ended without
// its terminal event is malformed.
func streamEnd(err error, disconnected, terminated bool, failure string) outcome {
	o := outcome{status: http.StatusOK, answered: true, failure: failure}
	switch {
	case disconnected:
		o.disconnected, o.failure = true, ""
	case err != nil && errors.Is(err, errMalformed):
		o.malformed = err.Error()
	case err != nil:
		o.failure, o.transport = "reading the stream: "+err.Error(), true
	case !terminated:
		o.malformed = "the stream ended without its terminal event"
	}
	return o
}

// errMalformed marks the errors of stream handlers that found a malformed event.
var errMalformed = errors.New("malformed")

func badEvent(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errMalformed, fmt.Sprintf(format, args...))
}
