// Package desktop is the desktop app's side of tray.Controller: what the window and the tray
// menu ask for (start and stop the server, list, load, pull and delete models, their
// settings, the playground, keys, activity, team mode's lanes and bookings), done over the
// core, the lanes manager and the bookings service like the APIs do.
// Package app builds it from Deps; tray knows only the interface.
package desktop

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

	"github.com/superfluid/superfluid/app/trayhost"
	"github.com/superfluid/superfluid/runtime/backends"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/runtime/models/source"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/store"
	"github.com/superfluid/superfluid/tray"
)

// Deps is what the controller drives; package app builds it.
type Deps struct {
	// Service is the core: models, generation, settings and the batch runner.
	Service *core.Service
	// Store keeps the playground's conversations, the request records and the app's settings.
	Store *store.Store
	// Keys are the API keys the Keys tab lists, creates and revokes.
	Keys *auth.Keyring
	// Handler is the HTTP API that StartServer serves.
	Handler http.Handler
	// Host and Port are where StartServer listens, until SetAddress changes them.
	Host string
	Port int
	// Expose readies the server for listening on host (the Host check, whether keys are
	// required) or says why it may not (a network address without an API key).
	Expose func(host string) error
	// StopBackground stops the batch runner (StopServer: batches are the server's work too);
	// StartBackground starts what runs beside the requests (the batch runner, the rereading
	// of keys) again.
	StopBackground  func(ctx context.Context) error
	StartBackground func() error
	// Runtimes are the runtimes this machine has (the CPU and those installed).
	Runtimes func() []backends.Backend
	// Team is team mode's lanes and bookings (team.go); nil outside team mode.
	Team *Team
	// Quants sizes a Hub repository's quantizations for the welcome's suggestion (firstrun.go);
	// nil: the welcome suggests nothing.
	Quants HubQuants
	// Search is the model source the Discover tab browses (discover.go); nil: none can.
	Search source.Searcher
	// Tray follows the desktop's tray host (desktop.go); nil: none.
	Tray *trayhost.Watcher
	// LoginArgs are the flags the start-at-login entry runs the binary with (--hidden).
	LoginArgs []string
}

// Controller is what the desktop app drives: the core, its HTTP server (started and stopped
// from the tray) and the events the window shows.
type Controller struct {
	d   Deps
	svc *core.Service
	// mgr is the core's model manager, read for what the window shows (states, memory,
	// events); every change goes through svc.
	mgr *models.Manager

	// life orders StartServer and StopServer: a Start clicked while a Stop still runs (the
	// window shows the server stopped from Stop's first step) waits for it, so that it sees
	// the batch runner Stop paused and starts it again.
	life   sync.Mutex
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
	closed     chan struct{} // closed by Close: ends the event relay
	closeOnce  sync.Once
	move       mover // the file work of MoveModels (firstrun_move.go)
}

var _ tray.Controller = (*Controller)(nil)

// New makes the controller over d and starts relaying the manager's events; Close ends it.
func New(d Deps) *Controller {
	c := &Controller{d: d, svc: d.Service, mgr: d.Service.Manager(), subs: map[chan tray.Event]struct{}{},
		status: tray.ServerStatus{Address: net.JoinHostPort(d.Host, strconv.Itoa(d.Port))}, closed: make(chan struct{})}
	events, stop := c.mgr.Subscribe(256)
	c.stopEvents = stop
	go func() {
		for {
			var ev models.Event
			select {
			case ev = <-events:
			case <-c.closed: // the manager never closes events: Close ends the relay
				return
			}
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
func (c *Controller) publish(ev tray.Event) {
	c.subsMu.Lock()
	defer c.subsMu.Unlock()
	for ch := range c.subs {
		select {
		case ch <- ev:
		default:
		}
	}
}

func (c *Controller) Subscribe() (<-chan tray.Event, func()) {
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

func (c *Controller) Server() tray.ServerStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}

func (c *Controller) APIURL() string {
	return "http://" + c.Server().Address + "/v1"
}

// StartServer listens on the configured address and serves the API there.
func (c *Controller) StartServer() error {
	c.life.Lock()
	defer c.life.Unlock()
	c.mu.Lock()
	if c.srv != nil {
		c.mu.Unlock()
		return nil
	}
	addr := net.JoinHostPort(c.d.Host, strconv.Itoa(c.d.Port))
	if err := c.d.Expose(c.d.Host); err != nil {
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
		if err := c.d.StartBackground(); err != nil {
			slog.Warn("the batch runner did not start again", "err", err)
		} else {
			c.paused = false
		}
	}
	srv := &http.Server{Handler: c.d.Handler, ReadHeaderTimeout: 30 * time.Second}
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
func (c *Controller) StopServer() error {
	c.life.Lock()
	defer c.life.Unlock()
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
	if err := c.d.StopBackground(bctx); err != nil {
		slog.Warn("the batch runner did not stop in time", "err", err)
	}
	c.mu.Lock()
	c.paused = true
	c.mu.Unlock()
	// Replies still running (the playground's too) get a second, then are stopped and their
	// workers stop; Stop returns once the workers are gone.
	c.svc.UnloadAll(time.Second)
	c.publish(tray.Event{Kind: tray.EventServer})
	return nil
}

// SetAddress changes the address the server listens on from its next start.
func (c *Controller) SetAddress(host string, port int) error {
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
	c.d.Host, c.d.Port = host, port
	c.status = tray.ServerStatus{Address: net.JoinHostPort(host, strconv.Itoa(port))}
	return nil
}

// Close stops the server and the event relay; calling it again does nothing.
func (c *Controller) Close() {
	c.closeOnce.Do(func() {
		_ = c.StopServer()
		c.stopEvents()
		close(c.closed)
	})
}

// StartHidden reports whether the app starts in the tray only (a setting in SQLite).
func (c *Controller) StartHidden() bool {
	v, _ := c.d.Store.AppSetting(context.Background(), "start_hidden")
	return v == "true"
}

func (c *Controller) SetStartHidden(hidden bool) error {
	return c.d.Store.SetAppSetting(context.Background(), "start_hidden", strconv.FormatBool(hidden))
}
