package models

import "sync"

// Event kinds.
const (
	EventLoading  = "loading"
	EventLoaded   = "loaded"
	EventUnloaded = "unloaded"
	EventFailed   = "failed"
	EventPull     = "pull"
	EventCatalog  = "catalog" // a model was added or removed
)

// Event is a change the desktop app shows: a model's state, pull progress, the catalog.
type Event struct {
	Kind  string
	Model string
	Err   string
	// Pull progress (Kind EventPull).
	Status           string
	Total, Completed int64
}

// events fans events out to subscribers without ever blocking the publisher: a subscriber that
// falls behind misses events.
type events struct {
	mu   sync.Mutex
	subs map[chan Event]struct{}
}

func newEvents() *events { return &events{subs: map[chan Event]struct{}{}} }

func (e *events) publish(ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for ch := range e.subs {
		select {
		case ch <- ev:
		default:
		}
	}
}

// Subscribe returns a channel of events and a function that ends the subscription.
func (m *Manager) Subscribe(buffer int) (<-chan Event, func()) {
	ch := make(chan Event, max(1, buffer))
	m.events.mu.Lock()
	m.events.subs[ch] = struct{}{}
	m.events.mu.Unlock()
	return ch, func() {
		m.events.mu.Lock()
		delete(m.events.subs, ch)
		m.events.mu.Unlock()
	}
}
