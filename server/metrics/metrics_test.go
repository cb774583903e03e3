package metrics

import (
	"context"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server/core"
)

// series is the value of every series of name in m's registry, by its labels' values joined
// with ",". Histograms give their sample count.
func series(t *testing.T, m *Metrics, name string) map[string]float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			out[labelValues(s)] = value(s)
		}
	}
	return out
}

func labelValues(s *dto.Metric) string {
	key := ""
	for i, l := range s.GetLabel() {
		if i > 0 {
			key += ","
		}
		key += l.GetValue()
	}
	return key
}

func value(s *dto.Metric) float64 {
	switch {
	case s.Counter != nil:
		return s.GetCounter().GetValue()
	case s.Gauge != nil:
		return s.GetGauge().GetValue()
	case s.Histogram != nil:
		return float64(s.GetHistogram().GetSampleCount())
	}
	return -1
}

// TestRequestLabelsBounded: requests are counted by route template; unrouted requests and
// unusual methods share one label value each.
func TestRequestLabelsBounded(t *testing.T) {
	m := New()
	cases := []struct {
		endpoint, method string
		status           int
	}{
		{"/v1/chat/completions", "POST", 200},
		{"/v1/chat/completions", "POST", 200},
		{"/v1/chat/completions", "POST", 400},
		{"", "GET", 404},
		{"", "BREW", 405},
		{"", "PROPFIND", 405},
	}
	for _, c := range cases {
		m.Request(c.endpoint, c.method, c.status)
	}
	want := map[string]float64{
		"/v1/chat/completions,POST,200": 2,
		"/v1/chat/completions,POST,400": 1,
		Unrouted + ",GET,404":           1,
		Unrouted + ",OTHER,405":         2,
	}
	got := series(t, m, Requests)
	if len(got) != len(want) {
		t.Errorf("series %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s{%s} = %v, want %v", Requests, k, got[k], v)
		}
	}
}

// TestObserverCounts: tokens, latencies and batch lines land in their series.
func TestObserverCounts(t *testing.T) {
	m := New()
	m.Tokens("a", llm.Usage{PromptTokens: 10, CachedTokens: 4, CompletionTokens: 7})
	m.Tokens("a", llm.Usage{PromptTokens: 5, CompletionTokens: 1})
	m.Tokens("b", llm.Usage{PromptTokens: 2})
	g := m.Generation("a")
	g.FirstToken(20 * time.Millisecond)
	g.InterToken(30*time.Millisecond, 3) // three tokens, 10 ms each
	g.InterToken(5*time.Millisecond, 1)
	m.Generation("b").FirstToken(time.Second)
	for _, ok := range []bool{true, true, false} {
		m.BatchLine(ok)
	}
	cases := []struct {
		name string
		want map[string]float64
	}{
		{PromptTokens, map[string]float64{"a": 15, "b": 2}},
		{CachedTokens, map[string]float64{"a": 4, "b": 0}},
		{CompletionTokens, map[string]float64{"a": 8, "b": 0}},
		{TTFT, map[string]float64{"a": 1, "b": 1}},
		{InterToken, map[string]float64{"a": 4, "b": 0}},
		{BatchLines, map[string]float64{"completed": 2, "failed": 1}},
	}
	for _, c := range cases {
		got := series(t, m, c.name)
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s{%s} = %v, want %v (all: %v)", c.name, k, got[k], v, got)
			}
		}
	}
	// The three tokens of the 30 ms piece are 10 ms apart each: bucket le=0.01 holds them.
	fams, _ := m.Registry().Gather()
	for _, f := range fams {
		if f.GetName() != InterToken {
			continue
		}
		for _, s := range f.GetMetric() {
			if labelValues(s) != "a" {
				continue
			}
			for _, b := range s.GetHistogram().GetBucket() {
				if b.GetUpperBound() == 0.005 && b.GetCumulativeCount() != 1 || b.GetUpperBound() == 0.01 && b.GetCumulativeCount() != 4 {
					t.Errorf("bucket le=%v holds %d", b.GetUpperBound(), b.GetCumulativeCount())
				}
			}
		}
	}
}

// TestModelEvents: loads, failed loads and unloads are counted by model; other events are not.
func TestModelEvents(t *testing.T) {
	m := New()
	events := []struct{ kind, model string }{
		{models.EventLoading, "a"},
		{models.EventLoaded, "a"},
		{models.EventUnloaded, "a"},
		{models.EventLoading, "a"},
		{models.EventLoaded, "a"},
		{models.EventFailed, "b"},
		{models.EventPull, "c"},
		{models.EventCatalog, "c"},
	}
	for _, ev := range events {
		m.ModelEvent(ev.kind, ev.model)
	}
	cases := []struct {
		name string
		want map[string]float64
	}{
		{ModelLoads, map[string]float64{"a": 2}},
		{ModelLoadFails, map[string]float64{"b": 1}},
		{ModelEvictions, map[string]float64{"a": 1}},
	}
	for _, c := range cases {
		got := series(t, m, c.name)
		if len(got) != len(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s{%s} = %v, want %v", c.name, k, got[k], v)
			}
		}
	}
}

// lanesEngine holds every generation until release closes, and reports lanes busy as told.
type lanesEngine struct {
	*enginetest.Engine
	entered chan struct{}
	release chan struct{}
	lanes   []llm.LaneState
	queued  int
}

func (e *lanesEngine) Generate(ctx context.Context, req *llm.Request, emit func(llm.Event) error) error {
	e.entered <- struct{}{}
	<-e.release
	return e.Engine.Generate(ctx, req, emit)
}

func (e *lanesEngine) Slots(context.Context) (llm.Slots, error) {
	return llm.Slots{Lanes: e.lanes, Queued: e.queued}, nil
}

// unloadedEngine is a model that is not loaded; asking its lanes would be a bug (it would
// load it, for a real model).
type unloadedEngine struct {
	*enginetest.Engine
	t *testing.T
}

func (e *unloadedEngine) Loaded() bool { return false }

func (e *unloadedEngine) Slots(context.Context) (llm.Slots, error) {
	e.t.Error("Slots asked of a model that is not loaded")
	return llm.Slots{}, nil
}

// TestModelsCollector: at scrape time, a loaded model reports its generations in flight, its
// busy and total lanes and what waits for a lane; a model that is not loaded and idle is not
// reported, and its lanes are never asked.
func TestModelsCollector(t *testing.T) {
	tmpl, _ := chat.Parse("")
	busy := &lanesEngine{Engine: enginetest.New(256, "ok"), entered: make(chan struct{}), release: make(chan struct{}),
		lanes: []llm.LaneState{{State: "decode"}, {State: "prefill"}, {State: "idle"}, {State: "idle"}}}
	svc := core.New(core.Config{}, nil,
		&core.Model{ID: "busy", Engine: busy, Template: tmpl},
		&core.Model{ID: "cold", Engine: &unloadedEngine{enginetest.New(256, "ok"), t}, Template: tmpl})
	m := New()
	m.WatchService(svc)

	const running = 3
	var wg sync.WaitGroup
	for range running {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := &core.ChatRequest{Model: "busy", Messages: []chat.Message{{Role: "user", Content: "hi"}}}
			if _, err := svc.Chat(context.Background(), req, func(int, llm.Event) error { return nil }); err != nil {
				t.Error(err)
			}
		}()
	}
	for range running {
		<-busy.entered // admitted (counted in flight) and at the engine
	}
	cases := []struct {
		name string
		want map[string]float64
	}{
		{Inflight, map[string]float64{"busy": 3}},
		{LanesBusy, map[string]float64{"busy": 2}},
		{Lanes, map[string]float64{"busy": 4}},
		{QueueDepth, map[string]float64{"busy": 1}}, // 3 admitted, 2 on lanes
	}
	for _, c := range cases {
		got := series(t, m, c.name)
		if len(got) != len(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s{%s} = %v, want %v", c.name, k, got[k], v)
			}
		}
	}
	busy.queued = 5 // the engine's own queue, when it says more waits
	if got := series(t, m, QueueDepth)["busy"]; got != 5 {
		t.Errorf("%s with the engine queueing 5: %v", QueueDepth, got)
	}
	close(busy.release)
	wg.Wait()
	busy.lanes = []llm.LaneState{{State: "idle"}, {State: "idle"}, {State: "idle"}, {State: "idle"}}
	busy.queued = 0
	if got := series(t, m, Inflight)["busy"]; got != 0 {
		t.Errorf("%s after the generations ended: %v", Inflight, got)
	}
	if got := series(t, m, QueueDepth)["busy"]; got != 0 {
		t.Errorf("%s after the generations ended: %v", QueueDepth, got)
	}
}

// TestRegistriesIndependent: two servers' metrics never share a count.
func TestRegistriesIndependent(t *testing.T) {
	a, b := New(), New()
	a.BatchLine(true)
	if got := series(t, b, BatchLines)["completed"]; got != 0 {
		t.Errorf("b counted a's batch line: %v", got)
	}
}

// BenchmarkObserveInterToken is the observer's cost per token: one histogram observation.
func BenchmarkObserveInterToken(b *testing.B) {
	g := New().Generation("m")
	b.ReportAllocs()
	for b.Loop() {
		g.InterToken(20*time.Millisecond, 1)
	}
}

// BenchmarkObserveInterTokenParallel is the same from every CPU at once on one model: the
// histogram is lock-free, so this should not grow with contention.
func BenchmarkObserveInterTokenParallel(b *testing.B) {
	g := New().Generation("m")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			g.InterToken(20*time.Millisecond, 1)
		}
	})
}

// BenchmarkObserveGeneration runs whole generations of 512 tokens on the fake engine through
// the core, without and with metrics: the difference is the hooks' cost per request.
func BenchmarkObserveGeneration(b *testing.B) {
	reply := make([]byte, 512)
	for i := range reply {
		reply[i] = 'a' + byte(i%26)
	}
	tmpl, _ := chat.Parse("")
	for _, bc := range []struct {
		name string
		obs  core.Observer
	}{{"off", nil}, {"metrics", New()}} {
		b.Run(bc.name, func(b *testing.B) {
			svc := core.New(core.Config{Observer: bc.obs}, nil, &core.Model{ID: "m", Engine: enginetest.New(4096, string(reply)), Template: tmpl})
			req := &core.CompletionRequest{Model: "m", Generation: llm.Request{Prompt: "hi"}}
			emit := func(int, llm.Event) error { return nil }
			b.ReportAllocs()
			for b.Loop() {
				if _, err := svc.Complete(context.Background(), req, emit); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(reply)), "ns/token")
		})
	}
}
