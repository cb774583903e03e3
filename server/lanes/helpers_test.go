package lanes_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/store"
)

// held is a chat-level engine whose replies wait for release: one text delta, then the wait,
// then Done. It fails a request that reaches it after its model was released, which is what a
// drain must never let happen.
type held struct {
	model    string
	gate     chan struct{} // closed to let replies finish
	started  chan struct{} // one send per request that reached the engine
	released *atomic.Bool
	t        *testing.T
}

func (h *held) Chat(ctx context.Context, _ *core.ChatRequest, emit func(llm.Event) error) error {
	if h.released.Load() {
		h.t.Errorf("a request reached %s after its engine was released", h.model)
	}
	select {
	case h.started <- struct{}{}:
	default:
	}
	if err := emit(llm.Event{Text: "hi", Tokens: 1}); err != nil {
		return err
	}
	select {
	case <-h.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	if h.released.Load() {
		h.t.Errorf("%s was released while a request ran on it", h.model)
	}
	return emit(llm.Event{Done: &llm.Done{FinishReason: "stop", Usage: llm.Usage{PromptTokens: 1, CompletionTokens: 1}}})
}

func (h *held) Complete(context.Context, *core.CompletionRequest, func(llm.Event) error) error {
	return errors.New("not used")
}

func (h *held) Embed(context.Context, *core.EmbedRequest) (*llm.EmbedResult, error) {
	return nil, errors.New("not used")
}

// bench is a manager, a router and a core over a factory of held engines.
type bench struct {
	t        *testing.T
	store    *store.Store
	mgr      *lanes.Manager
	router   *lanes.Router
	svc      *core.Service
	booked   *bookings
	gate     chan struct{}
	started  chan struct{}
	mu       sync.Mutex
	builds   map[string]int // model → times built
	releases map[string]int // model → times released
	fail     map[string]int // model → starts left to fail
	health   atomic.Bool    // what a built engine's Healthy says (true unless a test says)
}

// catalogModels are the models the core's fixed set has: a local lane may serve them.
var catalogModels = []string{"alpha", "beta", "gamma"}

var testDevices = []lanes.Device{{Name: "cpu"}, {Name: "cuda:0", GPU: true}, {Name: "cuda:1", GPU: true}}

func newBench(t *testing.T) *bench { return newBenchRecording(t, false) }

// newBenchRecording is a bench whose core records its requests in the store when record is set.
func newBenchRecording(t *testing.T, record bool) *bench {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "superfluid.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b := &bench{t: t, store: st, gate: make(chan struct{}), started: make(chan struct{}, 64),
		builds: map[string]int{}, releases: map[string]int{}, fail: map[string]int{}, booked: &bookings{}}
	b.health.Store(true)
	tmpl, _ := chat.Parse("")
	var fixed []*core.Model
	for _, id := range catalogModels {
		fixed = append(fixed, &core.Model{ID: id, Engine: enginetest.New(4096, "catalog"), Template: tmpl})
	}
	var recorder *store.Store
	if record {
		recorder = st
	}
	b.svc = core.New(core.Config{}, recorder, fixed...)
	b.mgr = lanes.NewManager(lanes.Config{Store: st, Devices: testDevices, Catalog: b.svc, Factory: b.build})
	b.router = lanes.NewRouter(b.mgr, b.booked, b.svc)
	b.svc.SetRouter(b.router)
	t.Cleanup(func() {
		b.open()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		b.mgr.Close(ctx)
	})
	return b
}

// open lets every held reply finish.
func (b *bench) open() {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-b.gate:
	default:
		close(b.gate)
	}
}

// healthEngine is a fake engine that says whether it is healthy, as a supervised process's does.
type healthEngine struct {
	*enginetest.Engine
	ok *atomic.Bool
}

func (h healthEngine) Healthy() bool { return h.ok.Load() }

func (b *bench) build(_ context.Context, spec lanes.Spec) (*core.Model, func(), error) {
	name := spec.Lane.Model
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail[name] > 0 {
		b.fail[name]--
		return nil, nil, errors.New("exit status 1")
	}
	b.builds[name]++
	released := new(atomic.Bool)
	fake := enginetest.New(4096, "")
	fake.Lanes = 16
	h := &held{model: name, gate: b.gate, started: b.started, released: released, t: b.t}
	m := &core.Model{ID: name, Engine: healthEngine{fake, &b.health}, Requests: h}
	return m, func() {
		released.Store(true)
		b.mu.Lock()
		b.releases[name]++
		b.mu.Unlock()
	}, nil
}

func (b *bench) counts(model string) (builds, releases int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.builds[model], b.releases[model]
}

// add adds a lane and waits for it to settle.
func (b *bench) add(name, device, model string) *lanes.Lane {
	b.t.Helper()
	if _, err := b.mgr.Add(context.Background(), lanes.NewLane{Name: name, Device: device, Engine: lanes.Local, Model: model}); err != nil {
		b.t.Fatalf("add %s: %v", name, err)
	}
	l := b.laneNamed(name)
	settle(b.t, l)
	return l
}

func (b *bench) laneNamed(name string) *lanes.Lane {
	for _, l := range b.mgr.Lanes() {
		if l.Name() == name {
			return l
		}
	}
	b.t.Fatalf("no lane %s", name)
	return nil
}

func settle(t *testing.T, l *lanes.Lane) {
	t.Helper()
	select {
	case <-l.Settled():
	case <-time.After(5 * time.Second):
		t.Fatalf("lane %s did not settle: %+v", l.Name(), l.Status())
	}
}

// chat sends a streaming chat for model as person ("" without a key), returning its result.
func (b *bench) chat(person, model string) (*core.Result, error) {
	ctx := context.Background()
	if person != "" {
		ctx = auth.NewContext(ctx, &auth.Identity{ID: "key-" + person, Name: person})
	}
	return b.svc.Chat(ctx, &core.ChatRequest{Model: model, Stream: true, Messages: []chat.Message{{Role: "user", Content: "hello"}}},
		func(int, llm.Event) error { return nil })
}

// code is err's spec code ("" for nil, "other: ..." for an error without one).
func code(err error) string {
	if err == nil {
		return ""
	}
	var se *llm.StatusError
	if errors.As(err, &se) {
		return se.Code
	}
	return "other: " + err.Error()
}

// bookings is an in-memory Reservations.
type bookings struct {
	mu   sync.Mutex
	list []lanes.Reservation
}

func (b *bookings) Active(now time.Time) []lanes.Reservation {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []lanes.Reservation
	for _, r := range b.list {
		if !now.Before(r.Start) && now.Before(r.End) {
			out = append(out, r)
		}
	}
	return out
}

func (b *bookings) set(rs ...lanes.Reservation) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.list = rs
}
