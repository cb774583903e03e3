package tray

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// fakeController is an in-memory server for headless UI tests.
type fakeController struct {
	mu       sync.Mutex
	status   ServerStatus
	models   []Model
	events   chan Event
	reply    string
	thinking string        // reasoning streamed before the reply
	gate     chan struct{} // when set, Chat waits for it after the first piece
	prefill  chan struct{} // when set, Chat waits for it before any piece (reading the prompt)
	returned chan struct{} // when set, Chat closes it as it returns
	pullErr  error
	chatErr  error
	asked    [][]Message // the messages of each Chat, in order
	refuse   error       // Chat fails with it before any piece (the core refused the request)
	pulls    int
	stopped  int
	convs    []Conversation
	evMu     sync.Mutex // guards sends against the close when the app stops listening
	closed   bool
	settings map[string]ModelSettings
	hidden   bool
	keys     []APIKey // fake_keys_test.go
	keySeq   int
	team     *fakeTeam     // fake_team_test.go; nil: team mode off
	first    *fakeFirstRun // fake_firstrun_test.go; nil: welcomed, nothing to suggest
	chat     *fakeChat     // fake_chat_test.go; nil: a 2048-token window, no counting error
	discover *fakeDiscover // fake_discover_test.go
	desktop  *fakeDesktop  // fake_desktop_test.go; nil: a tray host, no autostart
}

func (f *fakeController) Conversations() []Conversation {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Conversation
	for i := len(f.convs) - 1; i >= 0; i-- {
		c := f.convs[i]
		c.Messages = nil
		out = append(out, c)
	}
	return out
}

func (f *fakeController) OpenConversation(id string) (Conversation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.convs {
		if c.ID == id {
			return c, nil
		}
	}
	return Conversation{}, errors.New("no such conversation")
}

func (f *fakeController) SaveConversation(c Conversation) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c.Updated = "16:00"
	for i := range f.convs {
		if f.convs[i].ID == c.ID {
			f.convs = append(f.convs[:i], f.convs[i+1:]...)
			break
		}
	}
	f.convs = append(f.convs, c)
	return nil
}

func newFake() *fakeController {
	return &fakeController{
		status: ServerStatus{Running: true, Address: "127.0.0.1:8453"},
		models: []Model{
			{ID: "stories260K", Quantization: "F32", Source: "bundled", Size: 1185376, Context: 2048, State: "unloaded", Need: 70 << 20},
			{ID: "hf.co/owner/tiny-GGUF:Q8_0", Quantization: "Q8_0", Source: "huggingface", Size: 5 << 20, Context: 4096, State: "unloaded"},
		},
		events: make(chan Event, 100),
		reply:  "Once upon a time there was a fox.",
	}
}

func (f *fakeController) Server() ServerStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status
}

func (f *fakeController) StartServer() error {
	f.mu.Lock()
	f.status = ServerStatus{Running: true, Address: f.status.Address}
	f.mu.Unlock()
	f.send(Event{Kind: EventServer})
	return nil
}

func (f *fakeController) StopServer() error {
	f.mu.Lock()
	f.status = ServerStatus{Address: "127.0.0.1:8453"}
	f.stopped++
	f.mu.Unlock()
	f.send(Event{Kind: EventServer})
	return nil
}

func (f *fakeController) APIURL() string { return "http://127.0.0.1:8453/v1" }

func (f *fakeController) Models() []Model {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Model(nil), f.models...)
}

func (f *fakeController) setState(id, state string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.models {
		if f.models[i].ID == id {
			f.models[i].State = state
			f.send(Event{Kind: EventModels, Model: id})
			return nil
		}
	}
	return errors.New("no such model")
}

func (f *fakeController) Load(id string) error   { return f.setState(id, "loaded") }
func (f *fakeController) Unload(id string) error { return f.setState(id, "unloaded") }

func (f *fakeController) Delete(id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.models {
		if f.models[i].ID == id {
			f.models = append(f.models[:i], f.models[i+1:]...)
			f.send(Event{Kind: EventModels})
			return nil
		}
	}
	return errors.New("no such model")
}

// Pull sends progress in ten steps, then adds the model; cancelling stops it.
func (f *fakeController) Pull(ctx context.Context, ref string) error {
	f.mu.Lock()
	f.pulls++
	err := f.pullErr
	f.mu.Unlock()
	if err != nil {
		return err
	}
	const total = 10 << 20
	for i := 1; i <= 10; i++ {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		f.send(Event{Kind: EventPull, Model: ref, Status: "pulling", Total: total, Completed: int64(i) * total / 10})
	}
	f.mu.Lock()
	f.models = append(f.models, Model{ID: ref, State: "unloaded", Size: total})
	f.mu.Unlock()
	f.send(Event{Kind: EventModels})
	return nil
}

// Chat streams the reply word by word.
func (f *fakeController) Chat(ctx context.Context, s ChatSettings, msgs []Message, onPiece func(Piece)) (ChatStats, error) {
	onText := func(text string) { onPiece(Piece{Text: text}) }
	if f.returned != nil {
		defer close(f.returned)
	}
	f.mu.Lock()
	f.asked = append(f.asked, msgs)
	refuse := f.refuse
	f.mu.Unlock()
	if refuse != nil {
		return ChatStats{}, refuse
	}
	if f.chatErr != nil {
		onText("Once ")
		return ChatStats{}, f.chatErr
	}
	if f.prefill != nil {
		select {
		case <-f.prefill:
		case <-ctx.Done():
			return ChatStats{}, ctx.Err()
		}
	}
	for _, w := range strings.SplitAfter(f.thinking, " ") {
		if w != "" {
			onPiece(Piece{Reasoning: w})
		}
	}
	words := strings.SplitAfter(f.reply, " ")
	for i, w := range words {
		if ctx.Err() != nil {
			return ChatStats{}, ctx.Err()
		}
		onText(w)
		if i == 0 && f.gate != nil {
			select {
			case <-f.gate:
			case <-ctx.Done():
				return ChatStats{}, ctx.Err()
			}
		}
	}
	return ChatStats{PromptTokens: 12, CachedTokens: 4, CompletionTokens: len(words), TokensPerSecond: 123.4, FinishReason: "stop"}, nil
}

func (f *fakeController) Generating() int { return f.desktop.running() } // fake_desktop_test.go

func (f *fakeController) Settings(id string) (ModelSettings, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.settings[id], nil
}

func (f *fakeController) SetSettings(id string, s ModelSettings) error {
	if s.Runtime != "cpu" && s.Runtime != "" {
		return errors.New("there is no " + s.Runtime + " runtime")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.settings == nil {
		f.settings = map[string]ModelSettings{}
	}
	f.settings[id] = s
	return nil
}

func (f *fakeController) StartHidden() bool { return f.hidden }

func (f *fakeController) SetStartHidden(on bool) error {
	f.hidden = on
	return nil
}

func (f *fakeController) Runtimes() []string { return []string{"cpu", "vulkan"} }

// Memory is 100 MB of weights plus 1 kB per token of context in each lane.
func (f *fakeController) Memory(id string, ctx, lanes int) (int64, int64) {
	if ctx == 0 {
		ctx = 2048
	}
	if lanes == 0 {
		lanes = 4
	}
	return 100e6 + int64(ctx*lanes)*1000, 1e9
}

func (f *fakeController) SetAddress(host string, port int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status.Address = net.JoinHostPort(host, strconv.Itoa(port))
	f.status.Err = ""
	return nil
}

func (f *fakeController) Activity() Activity {
	return Activity{
		Lanes:    []Lane{{Model: "stories260K", ID: 0, State: "decode", Task: "chatcmpl-1", CachedTokens: 40, Generated: 12}},
		Requests: []Request{{Time: "16:01:02", Model: "stories260K", Endpoint: "/v1/chat/completions", Status: 200, PromptTokens: 12, CachedTokens: 11, CompletionTokens: 24, Duration: "31ms", FinishReason: "length"}},
	}
}

// send delivers an event unless the app stopped listening (a test's app quit or ended).
func (f *fakeController) send(ev Event) {
	f.evMu.Lock()
	defer f.evMu.Unlock()
	if !f.closed {
		select {
		case f.events <- ev:
		default:
		}
	}
}

func (f *fakeController) Subscribe() (<-chan Event, func()) {
	return f.events, func() {
		f.evMu.Lock()
		defer f.evMu.Unlock()
		if !f.closed {
			f.closed = true
			close(f.events)
		}
	}
}
