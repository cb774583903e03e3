package app

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/superfluid/superfluid/server/metrics"
)

// TestMetricsEndToEnd: /metrics and /v1/metrics answer on the real app over a real worker:
// the chat request sent is counted with the tokens its reply reports, the loaded model's lanes
// come from the worker, and unloading the model counts a load and an eviction.
func TestMetricsEndToEnd(t *testing.T) {
	cfg := testConfig(t, testModel)
	a, srv := startServer(t, cfg, true)
	id := modelID(testModel)
	reply, err := sdk(srv.URL).Chat.Completions.New(context.Background(), storyParamsFor(testModel, 6))
	if err != nil {
		t.Fatal(err)
	}
	fams := scrapeMetrics(t, srv.URL+"/metrics")
	byModel := map[string]string{"model": id}
	checks := []struct {
		name      string
		labels    map[string]string
		got, want float64
	}{
		{metrics.Requests, map[string]string{"endpoint": "/v1/chat/completions", "method": "POST", "status": "200"}, 0, 1},
		{metrics.PromptTokens, byModel, 0, float64(reply.Usage.PromptTokens)},
		{metrics.CompletionTokens, byModel, 0, float64(reply.Usage.CompletionTokens)},
		{metrics.CachedTokens, byModel, 0, float64(reply.Usage.PromptTokensDetails.CachedTokens)},
		{metrics.TTFT, byModel, 0, 1},
		{metrics.Lanes, byModel, 0, float64(cfg.Parallel)},
		{metrics.LanesBusy, byModel, 0, 0},
		{metrics.Inflight, byModel, 0, 0},
		{metrics.QueueDepth, byModel, 0, 0},
	}
	for _, c := range checks {
		if got := metricValue(t, fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// Pieces after the first are inter-token gaps: at most one per completion token but one.
	if got := metricValue(t, fams, metrics.InterToken, byModel); got > float64(reply.Usage.CompletionTokens-1) {
		t.Errorf("%s = %v for %d completion tokens", metrics.InterToken, got, reply.Usage.CompletionTokens)
	}

	if _, err := a.Service().UnloadModel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	// The manager's events reach the counters through a subscription, after the unload
	// returns: wait for them (the test's own deadline bounds the wait).
	for {
		fams = scrapeMetrics(t, srv.URL+"/v1/metrics")
		loads, evictions := metricValue(t, fams, metrics.ModelLoads, byModel), metricValue(t, fams, metrics.ModelEvictions, byModel)
		if loads >= 1 && evictions == 1 {
			break
		}
		if loads > 1 || evictions > 1 {
			t.Fatalf("loads %v, evictions %v: want 1 eviction after one load", loads, evictions)
		}
		if t.Context().Err() != nil {
			t.Fatalf("loads %v, evictions %v: want at least 1 and 1", loads, evictions)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, ok := fams[metrics.Lanes]; ok {
		t.Errorf("%s still reported for the unloaded model", metrics.Lanes)
	}
}

// scrapeMetrics reads url with Prometheus's text parser.
func scrapeMetrics(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", url, res.StatusCode, err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return fams
}

// metricValue is the value (a histogram's sample count) of the series of name whose labels
// include want; 0 when there is none.
func metricValue(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil {
		return 0
	}
next:
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if v, ok := want[l.GetName()]; ok && v != l.GetValue() {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	return 0
}
