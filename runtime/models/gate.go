package models

import "sync/atomic"

// loadGate is the Manager's say on starting a worker on a model file (SetLoadGate).
type loadGate struct {
	fn atomic.Pointer[func(id string) error]
}

// SetLoadGate makes the manager ask gate before it starts a worker on a model's file (a load,
// from any caller, or a tokenizer-only worker); an error refuses it and is the caller's answer.
// The core refuses while the models folder is being moved, as a file may be half-way there.
// gate is called with the manager's lock held (and before a fetch, without): it must not
// call the manager. nil unsets it.
func (m *Manager) SetLoadGate(gate func(id string) error) {
	if gate == nil {
		m.gate.fn.Store(nil)
		return
	}
	m.gate.fn.Store(&gate)
}

func (g *loadGate) check(id string) error {
	if fn := g.fn.Load(); fn != nil {
		return (*fn)(id)
	}
	return nil
}

// CloseTokenizers stops every tokenizer-only worker (after the counts on it) and waits for
// it: it keeps its model's file open. Under a refusing gate none starts again, and a count
// that was on one asks the gate (Tokenize's retry).
func (m *Manager) CloseTokenizers() {
	m.mu.Lock()
	var vocabs []Runner
	for _, s := range m.slots {
		if s.vocab != nil {
			vocabs = append(vocabs, s.vocab)
			s.vocab = nil
		}
	}
	m.mu.Unlock()
	for _, r := range vocabs {
		retire(r)
	}
}
