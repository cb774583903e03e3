package server

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/metrics"
	"github.com/superfluid/superfluid/server/servertest"
)

// metricsReply is the fake model's reply: ASCII, so each token is one piece of text.
const metricsReply = "hello metrics"

// TestMetricsMatchWhatWasSent sends known requests in every dialect, then reads /metrics with
// Prometheus's own text parser: request counters by route and status, token counters and the
// latency histograms' counts match exactly what was sent and generated.
func TestMetricsMatchWhatWasSent(t *testing.T) {
	tmpl, _ := chat.Parse("")
	fake := enginetest.New(4096, metricsReply)
	met := metrics.New()
	svc := core.New(core.Config{Observer: met}, nil, &core.Model{ID: "fake", Path: "/m/fake.gguf", Engine: fake, Template: tmpl})
	met.WatchService(svc)
	srv := httptest.NewServer(New(Config{Metrics: met}, svc))
	defer srv.Close()

	type sent struct {
		method, path, body string
		status             int
	}
	requests := []sent{
		{"POST", "/v1/chat/completions", `{"model":"fake","messages":[{"role":"user","content":"one"}]}`, 200},
		{"POST", "/v1/chat/completions", `{"model":"fake","messages":[{"role":"user","content":"two two"}],"max_tokens":4}`, 200},
		{"POST", "/v1/chat/completions", `{"model":"fake","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"three"}]}`, 200},
		{"POST", "/v1/chat/completions", `{"model":"fake"}`, 400}, // no messages: refused before the core
		{"POST", "/v1/chat/completions", `{"model":"fake","stream":true,"messages":[{"role":"user","content":"streamed"}]}`, 200},
		{"POST", "/v1/chat/completions", `{"model":"fake","stream":true,"max_tokens":2,"messages":[{"role":"user","content":"streamed, short"}]}`, 200},
		{"POST", "/v1/completions", `{"model":"fake","prompt":"raw text","max_tokens":5}`, 200},
		{"POST", "/v1/messages", `{"model":"fake","max_tokens":100,"messages":[{"role":"user","content":"anthropic"}]}`, 200},
		{"POST", "/api/chat", `{"model":"fake","stream":false,"messages":[{"role":"user","content":"ollama"}]}`, 200},
		{"POST", "/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`, 404},
		{"GET", "/v1/models/fake", "", 200},
		{"GET", "/v1/no/such/route", "", 404},
		{"GET", "/v1/no/such/route/either", "", 404},
	}
	wantRequests := map[[3]string]float64{}
	for _, r := range requests {
		res, body := servertest.Do(t, r.method, srv.URL+r.path, r.body)
		if res.StatusCode != r.status {
			t.Fatalf("%s %s: %d %s, want %d", r.method, r.path, res.StatusCode, body, r.status)
		}
		endpoint := r.path
		switch {
		case strings.HasPrefix(r.path, "/v1/no/"):
			endpoint = metrics.Unrouted
		case strings.HasPrefix(r.path, "/v1/models/"):
			endpoint = "/v1/models/*model"
		}
		wantRequests[[3]string{endpoint, r.method, strconv.Itoa(r.status)}]++
	}

	// What the engine ran: one generation per request that reached it, one token per byte.
	var wantPrompt, wantCompletion, wantInterToken float64
	gens := fake.Requests()
	for _, req := range gens {
		prompt, _ := fake.Tokenize(context.Background(), req.Prompt, req.AddSpecial, true)
		completion := len(metricsReply)
		if req.MaxTokens > 0 {
			completion = min(completion, req.MaxTokens)
		}
		wantPrompt += float64(len(prompt))
		wantCompletion += float64(completion)
		wantInterToken += float64(completion - 1) // every token after a choice's first
	}
	if len(gens) != 8 {
		t.Fatalf("the engine ran %d generations, want 8", len(gens))
	}

	fams := scrape(t, srv.URL+"/metrics")
	got := requestCounts(t, fams)
	for k, want := range wantRequests {
		if got[k] != want {
			t.Errorf("%s%v = %v, want %v", metrics.Requests, k, got[k], want)
		}
	}
	if len(got) != len(wantRequests) {
		t.Errorf("request series %v, want %v", got, wantRequests)
	}
	fakeModel := map[string]string{"model": "fake"}
	checks := []struct {
		name string
		got  float64
		want float64
	}{
		{metrics.PromptTokens, counter(t, fams, metrics.PromptTokens, fakeModel), wantPrompt},
		{metrics.CachedTokens, counter(t, fams, metrics.CachedTokens, fakeModel), 0},
		{metrics.CompletionTokens, counter(t, fams, metrics.CompletionTokens, fakeModel), wantCompletion},
		{metrics.TTFT + " count", histogramCount(t, fams, metrics.TTFT, fakeModel), float64(len(gens))},
		{metrics.InterToken + " count", histogramCount(t, fams, metrics.InterToken, fakeModel), wantInterToken},
		{metrics.Inflight, gauge(t, fams, metrics.Inflight, fakeModel), 0},
		{metrics.QueueDepth, gauge(t, fams, metrics.QueueDepth, fakeModel), 0},
		{metrics.BatchLines + " completed", counter(t, fams, metrics.BatchLines, map[string]string{"result": "completed"}), 0},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}

	// /v1/metrics serves the same registry, and the first scrape is now counted.
	fams = scrape(t, srv.URL+"/v1/metrics")
	if n := requestCounts(t, fams)[[3]string{"/metrics", "GET", "200"}]; n != 1 {
		t.Errorf("/metrics scrapes counted %v, want 1", n)
	}
}

// TestMetricsOff: a server built without metrics serves no /metrics route.
func TestMetricsOff(t *testing.T) {
	tmpl, _ := chat.Parse("")
	svc := core.New(core.Config{}, nil, &core.Model{ID: "fake", Path: "/m/fake.gguf", Engine: enginetest.New(64, "x"), Template: tmpl})
	srv := httptest.NewServer(New(Config{}, svc))
	defer srv.Close()
	for _, path := range []string{"/metrics", "/v1/metrics"} {
		if res, _ := servertest.Do(t, "GET", srv.URL+path, ""); res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s without metrics: %d, want 404", path, res.StatusCode)
		}
	}
}

// scrape reads url in the Prometheus text format with Prometheus's parser.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	res, body := servertest.Do(t, "GET", url, "")
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, res.Header.Get("Content-Type"))
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse %s: %v\n%s", url, err, body)
	}
	return fams
}

// requestCounts is the request counter by (endpoint, method, status).
func requestCounts(t *testing.T, fams map[string]*dto.MetricFamily) map[[3]string]float64 {
	t.Helper()
	out := map[[3]string]float64{}
	fam := fams[metrics.Requests]
	if fam == nil {
		t.Fatalf("no %s", metrics.Requests)
	}
	for _, m := range fam.GetMetric() {
		l := labels(m)
		out[[3]string{l["endpoint"], l["method"], l["status"]}] += m.GetCounter().GetValue()
	}
	return out
}

// find is the series of the family name whose labels include want.
func find(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	fam := fams[name]
	if fam == nil {
		t.Fatalf("no metric family %s", name)
	}
next:
	for _, m := range fam.GetMetric() {
		l := labels(m)
		for k, v := range want {
			if l[k] != v {
				continue next
			}
		}
		return m
	}
	t.Fatalf("no %s%v", name, want)
	return nil
}

func counter(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	return find(t, fams, name, want).GetCounter().GetValue()
}

func gauge(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	return find(t, fams, name, want).GetGauge().GetValue()
}

func histogramCount(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	return float64(find(t, fams, name, want).GetHistogram().GetSampleCount())
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}
