package openai_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestChoicesOverCapacity: n beyond the lanes and the queue together is a 400 on "n" naming
// the limit, not a 429 that no retry could ever pass.
func TestChoicesOverCapacity(t *testing.T) {
	tmpl, _ := chat.Parse("")
	svc := core.New(core.Config{Queue: 3}, servertest.Store(t), &core.Model{
		ID: "fake", Path: "/models/fake.gguf", Engine: enginetest.New(4096, "hi"), Template: tmpl, ContextLength: 4096,
	})
	srv := httptest.NewServer(server.New(server.Config{}, svc))
	t.Cleanup(srv.Close)
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	resp, b := servertest.Do(t, "POST", srv.URL+"/v1/chat/completions", `{"model":"fake","n":5,`+msgs+`}`)
	e := parseError(t, b)
	if resp.StatusCode != http.StatusBadRequest || e.Param != "n" || e.Type != "invalid_request_error" ||
		!strings.Contains(e.Message, "at most 4") || resp.Header.Get("Retry-After") != "" {
		t.Errorf("n=5 over 1 lane + 3 queued: %d %+v Retry-After %q", resp.StatusCode, e, resp.Header.Get("Retry-After"))
	}
	if resp, b := servertest.Do(t, "POST", srv.URL+"/v1/chat/completions", `{"model":"fake","n":4,`+msgs+`}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("n=4 at the limit: %d %s", resp.StatusCode, b)
	}
}

// TestForwardedForIgnored: X-Forwarded-For is not trusted by default, so a client cannot get
// a fresh fill-in-the-middle bucket per header value; with --trusted-proxies naming the
// peer, the header names the client.
func TestForwardedForIgnored(t *testing.T) {
	fim := `{"model":"coder","prompt":"a","suffix":"b","max_tokens":1}`
	burst := func(t *testing.T, url string) (statuses []int, last apiError) {
		for i := range 21 {
			resp, b := servertest.Do(t, "POST", url+"/v1/completions", fim, "X-Forwarded-For", fmt.Sprintf("10.0.0.%d", i+1))
			statuses = append(statuses, resp.StatusCode)
			if resp.StatusCode != http.StatusOK {
				last = parseError(t, b)
			}
		}
		return statuses, last
	}
	t.Run("untrusted", func(t *testing.T) {
		srv, _, _ := fimServer(t, true, "x", server.Config{CompletionBurst: 20, CompletionRate: 0.001}, nil)
		statuses, e := burst(t, srv.URL)
		for i, s := range statuses[:20] {
			if s != http.StatusOK {
				t.Fatalf("request %d within the burst: %d", i, s)
			}
		}
		if statuses[20] != http.StatusTooManyRequests || e.Code != "completion_rate_limited" {
			t.Fatalf("21st request from one client with a new X-Forwarded-For: %d %+v; want 429 completion_rate_limited", statuses[20], e)
		}
	})
	t.Run("trusted proxy", func(t *testing.T) {
		srv, _, _ := fimServer(t, true, "x", server.Config{CompletionBurst: 20, CompletionRate: 0.001, TrustedProxies: []string{"127.0.0.1"}}, nil)
		statuses, e := burst(t, srv.URL)
		for i, s := range statuses {
			if s != http.StatusOK {
				t.Fatalf("request %d for its own forwarded client behind a trusted proxy: %d %+v", i, s, e)
			}
		}
	})
}
