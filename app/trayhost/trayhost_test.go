package trayhost

import (
	"bufio"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

func ownerSignal(name, old, owner string) *dbus.Signal {
	return &dbus.Signal{Name: "org.freedesktop.DBus.NameOwnerChanged", Body: []interface{}{name, old, owner}}
}

// TestFollowFakeSignals: the host going away and coming back, over a fake bus's signals;
// other names, other signals and repeats change nothing; the end of the signals after Close
// closes Changes and changes nothing more.
func TestFollowFakeSignals(t *testing.T) {
	w := &Watcher{changes: make(chan bool, 8)}
	w.present.Store(true)
	signals := make(chan *dbus.Signal, 8)
	signals <- ownerSignal("org.other.Name", "", ":1.9")
	signals <- &dbus.Signal{Name: "org.freedesktop.DBus.NameAcquired", Body: []interface{}{WatcherName}}
	signals <- ownerSignal(WatcherName, ":1.4", "") // the panel quit
	signals <- ownerSignal(WatcherName, ":1.4", "") // said twice
	signals <- ownerSignal(WatcherName, "", ":1.7") // a panel started
	close(signals)
	w.Close()
	w.follow(signals)
	var got []bool
	for c := range w.changes {
		got = append(got, c)
	}
	if len(got) != 2 || got[0] || !got[1] || !w.Present() {
		t.Fatalf("changes %v, present %v", got, w.Present())
	}
}

// TestFollowNobodyReading: a host that comes and goes more often than anybody reads leaves
// the state now as the last change queued (the newest is never the one dropped).
func TestFollowNobodyReading(t *testing.T) {
	for _, last := range []bool{false, true} {
		w := &Watcher{changes: make(chan bool, 8)}
		w.present.Store(!last)
		signals := make(chan *dbus.Signal, 32)
		for i := 0; i < 21; i++ { // an odd count ends on last
			owner := ""
			if (i%2 == 0) == last {
				owner = ":1.7"
			}
			signals <- ownerSignal(WatcherName, "", owner)
		}
		close(signals)
		w.Close()
		w.follow(signals)
		var got []bool
		for c := range w.changes {
			got = append(got, c)
		}
		if len(got) == 0 || got[len(got)-1] != last || w.Present() != last {
			t.Fatalf("last %v: changes %v, present %v", last, got, w.Present())
		}
	}
}

// TestFollowBusLost: signals that end without Close (the session bus went away, and every
// tray host with it) report the host gone, so closing the window quits instead of hiding it
// into a tray that is not there.
func TestFollowBusLost(t *testing.T) {
	w := &Watcher{changes: make(chan bool, 8)}
	w.present.Store(true)
	signals := make(chan *dbus.Signal)
	close(signals)
	w.follow(signals)
	got, open := <-w.changes
	if !open || got || w.Present() {
		t.Fatalf("change %v (open %v), present %v after the bus went away", got, open, w.Present())
	}
}

// TestNoSessionBus: a session bus address where nothing listens is an error that says so.
func TestNoSessionBus(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+t.TempDir()+"/no-bus")
	w, err := Watch()
	if err == nil {
		w.Close()
		t.Fatal("watching without a bus worked")
	}
	if !strings.Contains(err.Error(), "no session bus") {
		t.Fatalf("err %v", err)
	}
}

// TestRealBus: over a real dbus-daemon, a connection taking the watcher name and releasing it
// is seen as a host coming and going.
func TestRealBus(t *testing.T) {
	startSessionBus(t)

	w, err := Watch()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.Present() {
		t.Fatal("a host on an empty bus")
	}
	host, err := dbus.ConnectSessionBus()
	if err != nil {
		t.Fatal(err)
	}
	if reply, err := host.RequestName(WatcherName, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("taking the name: %v %v", reply, err)
	}
	expect(t, w, true)
	host.Close() // the panel dies
	expect(t, w, false)
	w.Close()
	select {
	case _, open := <-w.Changes():
		if open {
			t.Fatal("a change after Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Changes still open after Close")
	}
}

// TestRealBusDies: a dbus-daemon killed while a host owns the name (the session ending under
// the app) is seen as the host gone.
func TestRealBusDies(t *testing.T) {
	cmd := startSessionBus(t)
	host, err := dbus.ConnectSessionBus()
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	if _, err := host.RequestName(WatcherName, dbus.NameFlagDoNotQueue); err != nil {
		t.Fatal(err)
	}
	w, err := Watch()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if !w.Present() {
		t.Fatal("the host is not seen")
	}
	cmd.Process.Kill()
	expect(t, w, false)
}

func expect(t *testing.T, w *Watcher, present bool) {
	t.Helper()
	select {
	case got := <-w.Changes():
		if got != present || w.Present() != present {
			t.Fatalf("change %v, present %v; want %v", got, w.Present(), present)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no change to %v", present)
	}
}

// startSessionBus starts a private dbus-daemon for the test, as the session bus (skips when
// dbus-daemon is not installed); the daemon is killed at the end.
func startSessionBus(t *testing.T) *exec.Cmd {
	t.Helper()
	daemon, err := exec.LookPath("dbus-daemon")
	if err != nil {
		t.Skip("dbus-daemon is not installed (apt-get install dbus)")
	}
	cmd := exec.Command(daemon, "--session", "--nofork", "--print-address=1")
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", strings.TrimSpace(addr))
	return cmd
}
