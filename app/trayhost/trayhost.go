// Package trayhost tells whether the desktop has a system tray that can show superfluid's
// icon: on Linux and the BSDs an icon is a StatusNotifierItem, shown only while some panel
// owns org.kde.StatusNotifierWatcher on the session bus. Watch follows that name's owner
// (NameOwnerChanged), so that the window can come back when the panel goes away. It uses
// godbus, the bus library fyne's systray already links, on its own connection.
package trayhost

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/godbus/dbus/v5"
)

// WatcherName is the bus name a tray host owns.
const WatcherName = "org.kde.StatusNotifierWatcher"

// Watcher follows whether a tray host is on the session bus.
type Watcher struct {
	conn    *dbus.Conn
	present atomic.Bool
	changes chan bool
	once    sync.Once
	closed  atomic.Bool // Close ran: the end of the signals is ours, not a lost bus
}

// Watch connects to the session bus (DBUS_SESSION_BUS_ADDRESS) and starts following the
// watcher name; it fails when there is no session bus at all.
func Watch() (*Watcher, error) {
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		return nil, fmt.Errorf("trayhost: no session bus: %w", err)
	}
	// The match goes first, so that an owner change between it and the question below is
	// not missed (at worst it is reported once more).
	if err := conn.AddMatchSignal(dbus.WithMatchInterface("org.freedesktop.DBus"),
		dbus.WithMatchMember("NameOwnerChanged"), dbus.WithMatchArg(0, WatcherName)); err != nil {
		conn.Close()
		return nil, fmt.Errorf("trayhost: watching %s: %w", WatcherName, err)
	}
	signals := make(chan *dbus.Signal, 16)
	conn.Signal(signals)
	var owned bool
	if err := conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, WatcherName).Store(&owned); err != nil {
		conn.Close()
		return nil, fmt.Errorf("trayhost: asking for %s: %w", WatcherName, err)
	}
	w := &Watcher{conn: conn, changes: make(chan bool, 8)}
	w.present.Store(owned)
	go w.follow(signals)
	return w, nil
}

// Fixed is a watcher that never changes: present on macOS and Windows, whose menu bar and
// notification area are always there; absent where there is no session bus to ask.
func Fixed(present bool) *Watcher {
	w := &Watcher{}
	w.present.Store(present)
	return w
}

// Present reports whether a tray host is there now.
func (w *Watcher) Present() bool { return w.present.Load() }

// Changes receives the new state each time a host comes or goes; it closes with Close. It is
// nil for a Fixed watcher.
func (w *Watcher) Changes() <-chan bool { return w.changes }

// Close ends the connection and closes Changes.
func (w *Watcher) Close() {
	w.once.Do(func() {
		w.closed.Store(true)
		if w.conn != nil {
			w.conn.Close()
		}
	})
}

// follow turns the bus's signals into changes until the connection closes its channel. A
// connection that ends without Close is a session bus gone, and every tray host with it.
func (w *Watcher) follow(signals <-chan *dbus.Signal) {
	defer close(w.changes)
	for s := range signals {
		present, ok := ownerChange(s)
		if ok && w.present.Swap(present) != present {
			w.send(present)
		}
	}
	if !w.closed.Load() && w.present.Swap(false) {
		w.send(false)
	}
}

// send queues a change without waiting for a reader; when the queue is full the oldest
// change goes, never the newest, so that the last one read is the state now.
func (w *Watcher) send(present bool) {
	for {
		select {
		case w.changes <- present:
			return
		default:
		}
		select {
		case <-w.changes:
		default:
		}
	}
}

// ownerChange reads a NameOwnerChanged signal about the watcher name: whether the name has
// an owner now; ok is false for any other signal.
func ownerChange(s *dbus.Signal) (present, ok bool) {
	if s == nil || s.Name != "org.freedesktop.DBus.NameOwnerChanged" || len(s.Body) != 3 {
		return false, false
	}
	name, _ := s.Body[0].(string)
	owner, isString := s.Body[2].(string)
	if name != WatcherName || !isString {
		return false, false
	}
	return owner != "", true
}
