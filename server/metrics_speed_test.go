package server

import (
	"net/http/httptest"
	"testing"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/metrics"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestMetricsSpeed: the speculation and restored-token counters sum the Done events of the
// requests that ran, in every dialect; requests without speculation add nothing.
func TestMetricsSpeed(t *testing.T) {
	tmpl, _ := chat.Parse("")
	fake := enginetest.New(4096, metricsReply) // 13 tokens: 6 proposed, 3 accepted each
	fake.RestoredTokens = 5
	met := metrics.New()
	svc := core.New(core.Config{Observer: met}, nil, &core.Model{ID: "fake", Path: "/m/fake.gguf", Engine: fake, Template: tmpl})
	srv := httptest.NewServer(New(Config{Metrics: met}, svc))
	defer srv.Close()
	for _, r := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"fake","speculative":"ngram","messages":[{"role":"user","content":"one"}]}`},
		{"/v1/chat/completions", `{"model":"fake","stream":true,"speculative":"draft","messages":[{"role":"user","content":"two"}]}`},
		{"/v1/messages", `{"model":"fake","max_tokens":100,"speculative":"ngram","messages":[{"role":"user","content":"three"}]}`},
		{"/api/chat", `{"model":"fake","stream":false,"options":{"speculative":"ngram"},"messages":[{"role":"user","content":"four"}]}`},
		{"/v1/chat/completions", `{"model":"fake","messages":[{"role":"user","content":"plain"}]}`},
	} {
		if res, body := servertest.Do(t, "POST", srv.URL+r.path, r.body); res.StatusCode != 200 {
			t.Fatalf("%s: %d %s", r.path, res.StatusCode, body)
		}
	}
	fams := scrape(t, srv.URL+"/metrics")
	fakeModel := map[string]string{"model": "fake"}
	for _, c := range []struct {
		name string
		want float64
	}{{metrics.SpecProposed, 4 * 6}, {metrics.SpecAccepted, 4 * 3}, {metrics.RestoredTokens, 5 * 5}} {
		if got := counter(t, fams, c.name, fakeModel); got != c.want {
			t.Errorf("%s = %v, want %v", c.name, got, c.want)
		}
	}
}
