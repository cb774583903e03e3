// Package metrics exports the server's Prometheus metrics (GET /metrics): requests by endpoint
// and status, tokens, token latencies, lanes and queues, model loads and evictions, batch lines.
// Each Metrics owns its own registry, so several servers (tests) never share counters. It is
// the core's Observer; the HTTP layer counts requests through Request, and the app feeds it
// the model manager's events (Watch).
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

// Metric names, for tests and dashboards.
const (
	Requests         = "superfluid_http_requests_total"
	PromptTokens     = "superfluid_prompt_tokens_total"
	CachedTokens     = "superfluid_cached_tokens_total"
	CompletionTokens = "superfluid_completion_tokens_total"
	TTFT             = "superfluid_time_to_first_token_seconds"
	InterToken       = "superfluid_inter_token_latency_seconds"
	Inflight         = "superfluid_generations_inflight"
	QueueDepth       = "superfluid_queue_depth"
	LanesBusy        = "superfluid_lanes_busy"
	Lanes            = "superfluid_lanes"
	ModelLoads       = "superfluid_model_loads_total"
	ModelLoadFails   = "superfluid_model_load_failures_total"
	ModelEvictions   = "superfluid_model_evictions_total"
	BatchLines       = "superfluid_batch_lines_total"
	SpecProposed     = "superfluid_spec_proposed_tokens_total"
	SpecAccepted     = "superfluid_spec_accepted_tokens_total"
	RestoredTokens   = "superfluid_prefix_restored_tokens_total"
)

// Unrouted is the endpoint label of requests no route took (404, 405), so a scan of random
// paths cannot grow the label set.
const Unrouted = "unrouted"

// Metrics is one server's metrics. Its methods are safe for concurrent use.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec

	prompt, cached, completion   *prometheus.CounterVec
	proposed, accepted, restored *prometheus.CounterVec
	ttft, interToken             *prometheus.HistogramVec

	loads, loadFails, evictions *prometheus.CounterVec
	batchDone, batchFailed      prometheus.Counter
}

// TTFTBuckets and InterTokenBuckets are the histograms' upper bounds, in seconds.
var (
	TTFTBuckets       = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}
	InterTokenBuckets = []float64{.001, .0025, .005, .01, .02, .04, .08, .16, .32, .64, 1.28, 2.56, 5}
)

// New makes the metrics and their registry, with the Go runtime and process collectors.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		m.reg.MustRegister(v)
		return v
	}
	histogram := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, []string{"model"})
		m.reg.MustRegister(v)
		return v
	}
	m.requests = counter(Requests, "HTTP requests answered, by route template, method and status code.", "endpoint", "method", "status")
	m.prompt = counter(PromptTokens, "Prompt tokens of generation requests (once per request, whatever n).", "model")
	m.cached = counter(CachedTokens, "Prompt tokens served from the prefix (KV) cache.", "model")
	m.completion = counter(CompletionTokens, "Completion tokens generated, all choices.", "model")
	m.proposed = counter(SpecProposed, "Tokens speculative decoding drafted for verification.", "model")
	m.accepted = counter(SpecAccepted, "Drafted tokens the target model kept.", "model")
	m.restored = counter(RestoredTokens, "Prompt tokens restored from the prefix cache on disk (part of the cached tokens).", "model")
	m.ttft = histogram(TTFT, "Time from a generation request's arrival to its first token.", TTFTBuckets)
	m.interToken = histogram(InterToken, "Time between consecutive completion tokens of one choice.", InterTokenBuckets)
	m.loads = counter(ModelLoads, "Models loaded.", "model")
	m.loadFails = counter(ModelLoadFails, "Model loads that failed.", "model")
	m.evictions = counter(ModelEvictions, "Models unloaded: keep-alive expired, room made for another model, or asked to.", "model")
	lines := counter(BatchLines, "Batch lines finished, by result (completed or failed).", "result")
	m.batchDone, m.batchFailed = lines.WithLabelValues("completed"), lines.WithLabelValues("failed")
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is the registry the metrics live in (to add collectors).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text format (or what the scraper negotiates).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Request counts one answered HTTP request. endpoint is the route template ("" for requests
// no route took), never the raw path; methods outside the standard set count as OTHER.
func (m *Metrics) Request(endpoint, method string, status int) {
	if endpoint == "" {
		endpoint = Unrouted
	}
	m.requests.WithLabelValues(endpoint, boundedMethod(method), strconv.Itoa(status)).Inc()
}

func boundedMethod(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return method
	}
	return "OTHER"
}

var _ core.Observer = (*Metrics)(nil)

// Generation returns the latency histograms of model, looked up once per request so each
// token costs only the histogram's atomic adds.
func (m *Metrics) Generation(model string) core.GenerationObserver {
	return &generation{ttft: m.ttft.WithLabelValues(model), interToken: m.interToken.WithLabelValues(model)}
}

// Tokens counts a generation request's tokens.
func (m *Metrics) Tokens(model string, u llm.Usage) {
	m.prompt.WithLabelValues(model).Add(float64(u.PromptTokens))
	m.cached.WithLabelValues(model).Add(float64(u.CachedTokens))
	m.completion.WithLabelValues(model).Add(float64(u.CompletionTokens))
}

var _ core.SpeedObserver = (*Metrics)(nil)

// Speed counts a generation request's speculation and disk-cache tokens. A model that never
// speculated or restored gets no series of these (nothing to add).
func (m *Metrics) Speed(model string, s core.Speed) {
	if s.SpecProposed > 0 || s.SpecAccepted > 0 {
		m.proposed.WithLabelValues(model).Add(float64(s.SpecProposed))
		m.accepted.WithLabelValues(model).Add(float64(s.SpecAccepted))
	}
	if s.RestoredTokens > 0 {
		m.restored.WithLabelValues(model).Add(float64(s.RestoredTokens))
	}
}

// BatchLine counts a finished batch line.
func (m *Metrics) BatchLine(ok bool) {
	if ok {
		m.batchDone.Inc()
	} else {
		m.batchFailed.Inc()
	}
}

type generation struct {
	ttft, interToken prometheus.Observer
}

func (g *generation) FirstToken(d time.Duration) { g.ttft.Observe(d.Seconds()) }

// InterToken observes the piece's gap once per token it covers, each gap/tokens long.
func (g *generation) InterToken(gap time.Duration, tokens int) {
	per := gap.Seconds() / float64(max(1, tokens))
	for range max(1, tokens) {
		g.interToken.Observe(per)
	}
}
