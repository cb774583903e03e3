// Package servertest holds the plumbing the dialect packages' tests share: a real SQLite store
// in the test's temp dir, and raw HTTP requests whose bodies come back read. Only tests import it.
package servertest

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/server/store"
)

// Store opens a fresh store under t.TempDir(), closed when the test ends.
func Store(t *testing.T) *store.Store {
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
