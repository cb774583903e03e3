package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/superfluid/superfluid/runtime/backends"
	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/store"
	"github.com/superfluid/superfluid/tray"
)

// controller is what the desktop app drives: the App, its HTTP server (started and stopped from
// the tray) and the events the window shows. It implements tray.Controller.
type controller struct {
	a *App

	mu     sync.Mutex
	srv    *http.Server
	status tray.ServerStatus
	served chan struct{} // closes when the running server's Serve returns
	// paused says StopServer stopped the batch runner, for StartServer to start it again.
	paused bool

	generating atomic.Int64
	subsMu     sync.Mutex
	subs       map[chan tray.Event]struct{}
	stopEvents func()
}

func newController(a *App) *controller {
	c := &controller{a: a, subs: map[chan tray.Event]struct{}{},
		status: tray.ServerStatus{Address: net.JoinHostPort(a.cfg.Host, strconv.Itoa(a.cfg.Port))}}
	events, stop := a.mgr.Subscribe(256)
	c.stopEvents = stop
	go func() {
		for ev := range events {
			if ev.Kind == models.EventPull {
				c.publish(tray.Event{Kind: tray.EventPull, Model: ev.Model, Status: ev.Status, Total: ev.Total, Completed: ev.Completed})
				continue
			}
			c.publish(tray.Event{Kind: tray.EventModels, Model: ev.Model, Err: ev.Err})
		}
	}()
	return c
}

// publish fans an event out without blocking: a subscriber that falls behind misses events
// (each carries the whole state to redraw, except progress, whose next event supersedes it).
func (c *controller) publish(ev tray.Event) {
	c.subsMu.Lock()
	defer c.subsMu.Unlock()
	for ch := range c.subs {
		select {
		case ch <- ev:
		default:
		}
	}
}

func (c *controller) Subscribe() (<-chan tray.Event, func()) {
	ch := make(chan tray.Event, 256)
	c.subsMu.Lock()
	c.subs[ch] = struct{}{}
	c.subsMu.Unlock()
	return ch, func() {
		c.subsMu.Lock()
		if _, ok := c.subs[ch]; ok {
			delete(c.subs, ch)
			close(ch)
		}
		c.subsMu.Unlock()
	}
}

func (c *controller) Server() tray.ServerStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}

func (c *controller) APIURL() string {
	return "http://" + c.Server().Address + "/v1"
}

// StartServer listens on the configured address and serves the API there.
func (c *controller) StartServer() error {
	c.mu.Lock()
	if c.srv != nil {
		c.mu.Unlock()
		return nil
	}
	addr := net.JoinHostPort(c.a.cfg.Host, strconv.Itoa(c.a.cfg.Port))
	if err := c.a.expose(c.a.cfg.Host); err != nil {
		// A non-loopback address without an API key: the window says to create one.
		c.status = tray.ServerStatus{Address: addr, Err: err.Error() + " (the Keys tab creates keys)"}
		c.mu.Unlock()
		c.publish(tray.Event{Kind: tray.EventServer})
		return errors.New(c.status.Err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		c.status = tray.ServerStatus{Address: addr, Err: listenError(addr, err)}
		c.mu.Unlock()
		c.publish(tray.Event{Kind: tray.EventServer})
		return errors.New(c.status.Err)
	}
	if c.paused {
		if err := c.a.startBackground(); err != nil {
			slog.Warn("the batch runner did not start again", "err", err)
		} else {
			c.paused = false
		}
	}
	srv := &http.Server{Handler: c.a.handler, ReadHeaderTimeout: 30 * time.Second}
	served := make(chan struct{})
	c.srv, c.served = srv, served
	c.status = tray.ServerStatus{Running: true, Address: l.Addr().String()}
	c.mu.Unlock()
	go func() {
		defer close(served)
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			c.mu.Lock()
			c.status = tray.ServerStatus{Address: addr, Err: err.Error()}
			c.srv = nil
			c.mu.Unlock()
			c.publish(tray.Event{Kind: tray.EventServer})
		}
	}()
	c.publish(tray.Event{Kind: tray.EventServer})
	return nil
}

// listenError says why the port cannot be used and what to do.
func listenError(addr string, err error) string {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Sprintf("%s is in use by another program; quit it, or start superfluid with --port", addr)
	}
	return fmt.Sprintf("cannot listen on %s: %v", addr, err)
}

// StopServer closes the listener, lets HTTP requests in flight finish (up to 10 s), stops the
// batch runner (the lines running are not recorded: they run again on Start) and unloads
// every model's worker.
func (c *controller) StopServer() error {
	c.mu.Lock()
	srv, served := c.srv, c.served
	c.srv = nil
	c.status = tray.ServerStatus{Address: c.status.Address}
	c.mu.Unlock()
	if srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-served
	}
	// Batches are the server's work too: left running, their lines would load the models
	// this unloads again, and those it cuts short would be recorded as failed.
	bctx, bcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer bcancel()
	if err := c.a.svc.StopBackground(bctx); err != nil {
		slog.Warn("the batch runner did not stop in time", "err", err)
	}
	c.mu.Lock()
	c.paused = true
	c.mu.Unlock()
	// Replies still running (the playground's too) get a second, then are stopped and their
	// workers stop. The drain is the unload's own (a context here would only stop the
	// waiting, and leave the unload draining for Config.UnloadDrain): Stop returns once the
	// workers are gone.
	var wg sync.WaitGroup
	for _, e := range c.a.mgr.Catalog().List() {
		if c.a.mgr.Status(e).State != models.StateUnloaded {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = c.a.mgr.UnloadWithin(context.Background(), e.ID, time.Second)
			}()
		}
	}
	wg.Wait()
	c.publish(tray.Event{Kind: tray.EventServer})
	return nil
}

// SetAddress changes the address the server listens on from its next start.
func (c *controller) SetAddress(host string, port int) error {
	if port < 1 || port > 65535 {
		return fmt.Errorf("port %d is not between 1 and 65535", port)
	}
	if host == "" {
		return errors.New("name the address to listen on, e.g. 127.0.0.1")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.srv != nil {
		return errors.New("stop the server before changing its port")
	}
	c.a.cfg.Host, c.a.cfg.Port = host, port
	c.status = tray.ServerStatus{Address: net.JoinHostPort(host, strconv.Itoa(port))}
	return nil
}

// Activity is the loaded models' lanes and the latest request records.
func (c *controller) Activity() tray.Activity {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var act tray.Activity
	for _, m := range c.a.svc.Models() {
		if !m.Loaded() {
			continue
		}
		_, slots, err := c.a.svc.Slots(ctx, m.ID)
		if err != nil {
			continue
		}
		for _, l := range slots.Lanes {
			act.Lanes = append(act.Lanes, tray.Lane{Model: m.ID, ID: l.ID, State: l.State, Task: l.Task,
				CachedTokens: l.CachedTokens, Generated: l.Generated})
		}
	}
	recs, _ := c.a.store.RecentRequests(ctx, 50)
	for _, r := range recs {
		act.Requests = append(act.Requests, tray.Request{
			Time: r.CreatedAt.Local().Format("15:04:05"), Model: r.Model, Endpoint: r.Endpoint, Status: r.Status,
			PromptTokens: r.PromptTokens, CachedTokens: r.CachedTokens, CompletionTokens: r.CompletionTokens,
			Duration: r.Total.Round(time.Millisecond).String(), FinishReason: r.FinishReason, Error: r.Error,
		})
	}
	return act
}

func (c *controller) Models() []tray.Model {
	entries := c.a.mgr.Catalog().List()
	out := make([]tray.Model, 0, len(entries))
	for _, e := range entries {
		st := c.a.mgr.Status(e)
		info := c.a.mgr.Engine(e).Info()
		m := tray.Model{ID: e.ID, Quantization: e.Quantization, Source: e.Source, Size: e.Size,
			Context: info.ContextLength, Runtime: info.Runtime, State: st.State, Need: st.Need}
		if st.Err != nil {
			m.Err = st.Err.Error()
		}
		out = append(out, m)
	}
	return out
}

func (c *controller) Load(id string) error {
	_, err := c.a.mgr.Load(context.Background(), id)
	return err
}

func (c *controller) Unload(id string) error {
	_, err := c.a.mgr.Unload(context.Background(), id)
	return err
}

func (c *controller) Delete(id string) error {
	_, err := c.a.svc.DeleteModel(context.Background(), id)
	c.publish(tray.Event{Kind: tray.EventModels})
	return err
}

func (c *controller) Pull(ctx context.Context, reference string) error {
	_, err := c.a.svc.PullModel(ctx, reference, nil)
	c.publish(tray.Event{Kind: tray.EventModels})
	return err
}

func (c *controller) Generating() int { return int(c.generating.Load()) }

// Conversations lists the saved playground chats, most recent first.
func (c *controller) Conversations() []tray.Conversation {
	list, err := c.a.store.Conversations(context.Background(), 100)
	if err != nil {
		return nil
	}
	out := make([]tray.Conversation, 0, len(list))
	for _, conv := range list {
		out = append(out, tray.Conversation{ID: conv.ID, Title: conv.Title, Model: conv.Model,
			Updated: conv.UpdatedAt.Local().Format("Jan 2 15:04")})
	}
	return out
}

func (c *controller) OpenConversation(id string) (tray.Conversation, error) {
	conv, err := c.a.store.ConversationByID(context.Background(), id)
	if err != nil {
		return tray.Conversation{}, err
	}
	out := tray.Conversation{ID: conv.ID, Title: conv.Title, Model: conv.Model, System: conv.System}
	for _, m := range conv.Messages {
		out.Messages = append(out.Messages, tray.Message{Role: m.Role, Content: m.Content})
	}
	return out, nil
}

func (c *controller) SaveConversation(conv tray.Conversation) error {
	rec := store.Conversation{ID: conv.ID, Title: conv.Title, Model: conv.Model, System: conv.System}
	for _, m := range conv.Messages {
		rec.Messages = append(rec.Messages, store.ConversationMessage{Role: m.Role, Content: m.Content})
	}
	return c.a.store.SaveConversation(context.Background(), rec)
}

// Chat runs a playground reply through the same core as the three APIs (the prefix cache and
// the request records included).
func (c *controller) Chat(ctx context.Context, s tray.ChatSettings, msgs []tray.Message, onPiece func(tray.Piece)) (tray.ChatStats, error) {
	c.generating.Add(1)
	c.publish(tray.Event{Kind: tray.EventActivity})
	defer func() {
		c.generating.Add(-1)
		c.publish(tray.Event{Kind: tray.EventActivity})
	}()
	req := &core.ChatRequest{ID: fmt.Sprintf("playground-%d", time.Now().UnixNano()), Endpoint: "playground", Stream: true, Model: s.Model}
	for _, m := range msgs {
		req.Messages = append(req.Messages, chat.Message{Role: m.Role, Content: m.Content, Reasoning: m.Reasoning})
	}
	temp := s.Temperature
	req.Generation = llm.Request{MaxTokens: s.MaxTokens, Sampling: llm.Sampling{Temperature: &temp}}
	res, err := c.a.svc.Chat(ctx, req, func(_ int, ev llm.Event) error {
		if ev.Text != "" || ev.Reasoning != "" {
			onPiece(tray.Piece{Text: ev.Text, Reasoning: ev.Reasoning})
		}
		return nil
	})
	if err != nil {
		return tray.ChatStats{}, err
	}
	u := res.Usage()
	stats := tray.ChatStats{PromptTokens: u.PromptTokens, CachedTokens: u.CachedTokens, CompletionTokens: u.CompletionTokens}
	d := res.Choices[0]
	stats.FinishReason = d.FinishReason
	if span := d.Timings.Decode; span > 0 && u.CompletionTokens > 1 {
		// The first token comes out of the prefill; the rest are the decode (Ollama's eval rate).
		stats.TokensPerSecond = float64(u.CompletionTokens-1) / span.Seconds()
	}
	return stats, nil
}

// close stops the server and the event relay.
func (c *controller) close() {
	_ = c.StopServer()
	c.stopEvents()
}

// StartHidden reports whether the app starts in the tray only (a setting in SQLite).
func (c *controller) StartHidden() bool {
	v, _ := c.a.store.AppSetting(context.Background(), "start_hidden")
	return v == "true"
}

func (c *controller) SetStartHidden(hidden bool) error {
	return c.a.store.SetAppSetting(context.Background(), "start_hidden", strconv.FormatBool(hidden))
}

// Settings returns a model's own settings in the dialog's terms.
func (c *controller) Settings(id string) (tray.ModelSettings, error) {
	e, err := c.a.mgr.Catalog().Lookup(id)
	if err != nil {
		return tray.ModelSettings{}, err
	}
	set, err := c.a.svc.ModelSettings(context.Background(), e.ID)
	out := tray.ModelSettings{ContextLength: set.ContextLength, Lanes: set.Lanes, Runtime: set.Runtime,
		MaxTokens: set.MaxTokens, SystemPrompt: set.SystemPrompt,
		DefaultContext: c.defaultContext(e), TrainContext: e.Facts.ContextLength}
	if set.KeepAlive != nil {
		out.KeepAlive = keepAliveText(*set.KeepAlive)
	}
	out.Temperature, out.TopP = floatText(set.Temperature), floatText(set.TopP)
	if set.TopK != nil {
		out.TopK = strconv.Itoa(*set.TopK)
	}
	return out, err
}

// defaultContext is the window e loads with when its settings name none: the manager's rule
// (--ctx, else the model's own window at most 4096).
func (c *controller) defaultContext(e *models.Entry) int {
	switch {
	case c.a.cfg.ContextLength > 0:
		return c.a.cfg.ContextLength
	case e.Facts.ContextLength > 0:
		return min(e.Facts.ContextLength, 4096)
	}
	return 4096
}

// SetSettings parses and stores a model's settings; the core validates the runtime.
func (c *controller) SetSettings(id string, s tray.ModelSettings) error {
	set := store.ModelSettings{ModelID: id, ContextLength: s.ContextLength, Lanes: s.Lanes, Runtime: s.Runtime,
		MaxTokens: s.MaxTokens, SystemPrompt: s.SystemPrompt}
	if set.Runtime == backends.CPU {
		set.Runtime = ""
	}
	var err error
	if s.KeepAlive != "" {
		if set.KeepAlive, err = models.ParseKeepAlive(strconv.AppendQuote(nil, s.KeepAlive)); err != nil {
			return fmt.Errorf("keep loaded for: %w", err)
		}
	}
	parse := func(name, text string, lo, hi float64) (*float64, error) {
		if text == "" {
			return nil, nil
		}
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || f < lo || f > hi {
			return nil, fmt.Errorf("%s must be a number from %g to %g", name, lo, hi)
		}
		return &f, nil
	}
	if set.Temperature, err = parse("temperature", s.Temperature, 0, 2); err != nil {
		return err
	}
	if set.TopP, err = parse("top P", s.TopP, 0, 1); err != nil {
		return err
	}
	if s.TopK != "" {
		k, err := strconv.Atoi(s.TopK)
		if err != nil || k < 0 {
			return fmt.Errorf("top K must be a whole number, 0 or more")
		}
		set.TopK = &k
	}
	err = c.a.svc.SetModelSettings(context.Background(), set)
	c.publish(tray.Event{Kind: tray.EventModels})
	return err
}

// Runtimes names the runtimes that can run here.
func (c *controller) Runtimes() []string {
	var out []string
	for _, r := range c.a.runtimes() {
		if r.Usable {
			out = append(out, r.Name)
		}
	}
	return out
}

// Memory estimates the model's RAM with a window and lanes (0: its current ones) and what the
// budget has free besides the model itself.
func (c *controller) Memory(id string, ctx, lanes int) (need, free int64) {
	e, err := c.a.mgr.Catalog().Lookup(id)
	if err != nil {
		return 0, 0
	}
	info := c.a.mgr.Engine(e).Info()
	if ctx <= 0 {
		ctx = info.ContextLength
	}
	if lanes <= 0 {
		lanes = info.Parallel
	}
	need = models.Estimate(e.Facts, ctx, lanes)
	budget, used := c.a.mgr.Budget()
	if st := c.a.mgr.Status(e); st.State != models.StateUnloaded {
		used -= st.Need
	}
	return need, min(budget-used, models.AvailableMemory())
}

func keepAliveText(d time.Duration) string {
	if d < 0 {
		return "-1"
	}
	return d.String()
}

func floatText(f *float64) string {
	if f == nil {
		return ""
	}
	return strconv.FormatFloat(*f, 'g', -1, 64)
}
