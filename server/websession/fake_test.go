package websession

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// fakeSession is a Session in memory: a chat replies with its reply pieces, one per
// pieceEvery, and records how it ended.
type fakeSession struct {
	mu         sync.Mutex
	models     map[string]string // id → state
	convs      map[string]Conversation
	settings   map[string]ModelSettings
	reply      []string
	pieceEvery time.Duration
	lastChat   ChatSettings
	lastMsgs   []Message
	stopped    chan struct{}    // gets a value when a chat ends by its context
	sees       map[string]Model // models' Vision and Audio by id
}

func newFake() *fakeSession {
	return &fakeSession{models: map[string]string{"tiny": "unloaded"}, convs: map[string]Conversation{},
		settings: map[string]ModelSettings{}, reply: []string{"Hello", ", ", "world", "."}, stopped: make(chan struct{}, 16)}
}

func (f *fakeSession) Models() []Model {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Model
	for id, st := range f.models {
		out = append(out, Model{ID: id, State: st, Quantization: "Q8_0", Size: 1000, Vision: f.sees[id].Vision, Audio: f.sees[id].Audio})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (f *fakeSession) setState(id, state string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.models[id]; !ok {
		return fmt.Errorf("model %s: %w", id, ErrNotFound)
	}
	f.models[id] = state
	return nil
}

func (f *fakeSession) Load(id string) error   { return f.setState(id, "loaded") }
func (f *fakeSession) Unload(id string) error { return f.setState(id, "unloaded") }

func (f *fakeSession) Chat(ctx context.Context, s ChatSettings, msgs []Message, onPiece func(Piece)) (ChatStats, error) {
	f.mu.Lock()
	f.lastChat, f.lastMsgs = s, msgs
	reply, every := f.reply, f.pieceEvery
	_, ok := f.models[s.Model]
	f.mu.Unlock()
	if !ok {
		return ChatStats{}, fmt.Errorf("model %s: %w", s.Model, ErrNotFound)
	}
	for i, p := range reply {
		if every > 0 {
			select {
			case <-ctx.Done():
				f.stopped <- struct{}{}
				return ChatStats{}, ctx.Err()
			case <-time.After(every):
			}
		}
		if i == 0 && strings.HasPrefix(p, "think:") {
			onPiece(Piece{Reasoning: strings.TrimPrefix(p, "think:")})
			continue
		}
		onPiece(Piece{Text: p})
	}
	return ChatStats{PromptTokens: 7, CachedTokens: 3, CompletionTokens: len(reply), TokensPerSecond: 42.5, FinishReason: "stop"}, nil
}

func (f *fakeSession) Conversations() []Conversation {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Conversation
	for _, c := range f.convs {
		c.Messages = nil
		out = append(out, c)
	}
	return out
}

func (f *fakeSession) OpenConversation(id string) (Conversation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.convs[id]
	if !ok {
		return c, fmt.Errorf("conversation %s: %w", id, ErrNotFound)
	}
	return c, nil
}

func (f *fakeSession) SaveConversation(c Conversation) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.convs[c.ID] = c
	return nil
}

func (f *fakeSession) DeleteConversation(id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.convs[id]; !ok {
		return fmt.Errorf("conversation %s: %w", id, ErrNotFound)
	}
	delete(f.convs, id)
	return nil
}

func (f *fakeSession) Settings(id string) (ModelSettings, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.models[id]; !ok {
		return ModelSettings{}, fmt.Errorf("model %s: %w", id, ErrNotFound)
	}
	return f.settings[id], nil
}

func (f *fakeSession) SetSettings(id string, s ModelSettings) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.settings[id] = s
	return nil
}
