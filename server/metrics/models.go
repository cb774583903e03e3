package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

// slotsTimeout bounds how long a scrape waits for one worker's lane snapshot.
const slotsTimeout = 2 * time.Second

// Service is what the models collector reads at scrape time (a *core.Service).
type Service interface {
	Models() []*core.Model
	Slots(ctx context.Context, name string) (*core.Model, llm.Slots, error)
}

// WatchService reports svc's models at every scrape: generations in flight, queue depth, busy
// and total lanes. Only models that are loaded or have generations in flight (waiting for a
// load) are reported, and reading them never loads one.
func (m *Metrics) WatchService(svc Service) {
	m.reg.MustRegister(&modelsCollector{svc: svc,
		inflight: prometheus.NewDesc(Inflight, "Generations admitted on the model: running on a lane or waiting for one.", []string{"model"}, nil),
		queue:    prometheus.NewDesc(QueueDepth, "Generations waiting for a lane (or for the model to load).", []string{"model"}, nil),
		busy:     prometheus.NewDesc(LanesBusy, "Lanes running a generation (prefill or decode).", []string{"model"}, nil),
		lanes:    prometheus.NewDesc(Lanes, "Lanes of the loaded model.", []string{"model"}, nil),
	})
}

type modelsCollector struct {
	svc                          Service
	inflight, queue, busy, lanes *prometheus.Desc
}

func (c *modelsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.inflight
	ch <- c.queue
	ch <- c.busy
	ch <- c.lanes
}

func (c *modelsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.svc.Models() {
		loaded, inflight := m.Loaded(), m.Inflight()
		if !loaded && inflight == 0 {
			continue
		}
		lanes, busy, queued := 0, 0, 0
		if loaded {
			ctx, cancel := context.WithTimeout(context.Background(), slotsTimeout)
			_, slots, err := c.svc.Slots(ctx, m.ID) // reports none for a model not loaded
			cancel()
			if err == nil {
				lanes, queued = len(slots.Lanes), slots.Queued
				for _, l := range slots.Lanes {
					if l.State != "" && l.State != "idle" {
						busy++
					}
				}
			}
		}
		// The core admits a generation before it takes a lane (or before its model loads):
		// what it holds beyond the busy lanes waits, as does what the engine itself queues.
		queued = max(queued, inflight-busy, 0)
		ch <- prometheus.MustNewConstMetric(c.inflight, prometheus.GaugeValue, float64(inflight), m.ID)
		ch <- prometheus.MustNewConstMetric(c.queue, prometheus.GaugeValue, float64(queued), m.ID)
		if loaded {
			ch <- prometheus.MustNewConstMetric(c.busy, prometheus.GaugeValue, float64(busy), m.ID)
			ch <- prometheus.MustNewConstMetric(c.lanes, prometheus.GaugeValue, float64(lanes), m.ID)
		}
	}
}

// ModelEvent counts a model manager event: loads, failed loads and unloads (evictions).
// model is the model's id.
func (m *Metrics) ModelEvent(kind, model string) {
	switch kind {
	case core.ModelEventLoaded:
		m.loads.WithLabelValues(model).Inc()
	case core.ModelEventFailed:
		m.loadFails.WithLabelValues(model).Inc()
	case core.ModelEventUnloaded:
		m.evictions.WithLabelValues(model).Inc()
	}
}

// ModelEvents is where Watch reads the model manager's events (a *core.Service).
type ModelEvents interface {
	ModelEvents(buffer int) (<-chan core.ModelEvent, func())
	EventModelID(name string) string
}

// Watch counts svc's model events until stop is called (stop may be called more than once).
func (m *Metrics) Watch(svc ModelEvents) (stop func()) {
	events, unsubscribe := svc.ModelEvents(256)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case ev := <-events:
				m.ModelEvent(ev.Kind, svc.EventModelID(ev.Model))
			case <-quit:
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			unsubscribe()
			close(quit)
			<-done
		})
	}
}
