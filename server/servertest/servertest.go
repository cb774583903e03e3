// Package servertest holds the plumbing the dialect packages' tests share: a real SQLite store
// in the test's temp dir, and raw HTTP requests whose bodies come back read. Only tests import it.
package servertest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/server/store"
)

// Store opens a fresh store under t.TempDir(), closed when the test ends.
func Store(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "db.sqlite"))
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return st
}

// Do sends method url with a raw body (JSON content type when not empty) and the extra
// headers given as key, value pairs, and returns the response with its body read.
func Do(t *testing.T, method, url, body string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return Send(t, req)
}

// Send performs req and returns the response with its body read.
func Send(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", req.Method, req.URL.Path, err)
	}
	return resp, b
}

// ToolTemplate is ChatML with Qwen 2.5's tool syntax, trimmed: tools in the system turn, an
// assistant turn as its text and then its calls as <tool_call> blocks (so a turn renders as the
// model wrote it and the next prompt continues the last), results as <tool_response> in a user
// turn.
const ToolTemplate = `{%- if tools %}<|im_start|>system
# Tools
<tools>
{%- for tool in tools %}
{{ tool | tojson }}
{%- endfor %}
</tools><|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == 'tool' %}<|im_start|>user
<tool_response>
{{ message.content }}
</tool_response><|im_end|>
{% else %}<|im_start|>{{ message.role }}
{% if message.content %}{{ message.content }}{% endif %}{% if message.tool_calls %}{% for call in message.tool_calls %}
{{- '\n<tool_call>\n{"name": "' + call.function.name + '", "arguments": ' + (call.function.arguments | tojson) + '}\n</tool_call>' }}
{%- endfor %}{% endif %}<|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}`

// Serve sends body to h in-process, as a request from a loopback client with a JSON content
// type and the extra headers given as key, value pairs, and returns the recorded response.
// Fuzz targets use it: no socket in the way.
func Serve(h http.Handler, method, path string, body []byte, headers ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.RemoteAddr = "127.0.0.1:40000"
	req.Host = "127.0.0.1:8453"
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// CheckReply fails t when rec is a 5xx, or a 2xx whose body does not parse as its content type
// says: one JSON value, SSE whose data lines are JSON (or [DONE]), or NDJSON lines of JSON
// objects. The dialect checks a 4xx's error shape itself.
func CheckReply(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	b, ct := rec.Body.Bytes(), rec.Header().Get("Content-Type")
	switch {
	case rec.Code >= 500:
		t.Fatalf("status %d: %s", rec.Code, b)
	case rec.Code >= 300:
		return
	case strings.HasPrefix(ct, "text/event-stream"):
		for _, line := range strings.Split(string(b), "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if ok && data != "[DONE]" && !json.Valid([]byte(data)) {
				t.Fatalf("SSE data is not JSON: %q", data)
			}
		}
	case strings.HasPrefix(ct, "application/x-ndjson"):
		for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if !strings.HasPrefix(line, "{") || !json.Valid([]byte(line)) {
				t.Fatalf("NDJSON line is not a JSON object: %q", line)
			}
		}
	case !json.Valid(b):
		t.Fatalf("status %d, Content-Type %q: body is not JSON: %q", rec.Code, ct, b)
	}
}
