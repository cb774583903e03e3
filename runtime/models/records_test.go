package models

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// memRecords is a RecordStore in memory for the catalog's tests (server/store's SQLite is the
// real one; its own tests and the server's cover it, and it cannot be imported here: it
// imports this package).
type memRecords struct {
	mu   sync.Mutex
	rows map[string]Record
}

func newMemRecords() *memRecords { return &memRecords{rows: map[string]Record{}} }

func (m *memRecords) PutModel(_ context.Context, r Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r.Capabilities = slices.Clone(r.Capabilities)
	m.rows[r.ID] = r
	return nil
}

func (m *memRecords) Models(context.Context) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Record
	for _, r := range m.rows {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Record) int { return a.AddedAt.Compare(b.AddedAt) })
	return out, nil
}

func (m *memRecords) DeleteModel(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.rows[id]; !ok {
		return fmt.Errorf("delete model %s: %w", id, ErrNoRecord)
	}
	delete(m.rows, id)
	return nil
}

func (m *memRecords) TouchModel(_ context.Context, id string, t time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.rows[id]; ok {
		r.LastUsedAt = t
		m.rows[id] = r
	}
	return nil
}
