package desktop_test

import (
	"context"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/superfluid/superfluid/app/desktop"
	"github.com/superfluid/superfluid/runtime/backends"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server/servertest"
)

// background counts the batch runner's stops and starts as the controller drives them; a stop
// can be held (to open the window in which another click lands).
type background struct {
	mu       sync.Mutex
	running  bool
	stopping chan struct{} // closed when a held stop is entered
	release  chan struct{} // a held stop returns once this is closed
}

func (b *background) stop(ctx context.Context) error {
	b.mu.Lock()
	stopping, release := b.stopping, b.release
	b.mu.Unlock()
	if stopping != nil {
		close(stopping)
		<-release
	}
	b.mu.Lock()
	b.running, b.stopping, b.release = false, nil, nil
	b.mu.Unlock()
	return nil
}

func (b *background) start() error {
	b.mu.Lock()
	b.running = true
	b.mu.Unlock()
	return nil
}

func (b *background) isRunning() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.running
}

func lifecycleController(t *testing.T, bg *background) *desktop.Controller {
	t.Helper()
	cat := servertest.NewCatalog(t, models.Config{})
	cat.AddModel(t, "m", gguftest.TinyLlamaOptions{})
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := free.Addr().(*net.TCPAddr).Port
	free.Close()
	bg.running = true // started by the app before the controller, as runDesktop does
	c := desktop.New(desktop.Deps{Service: cat.Svc, Store: cat.Store, Handler: http.NotFoundHandler(),
		Host: "127.0.0.1", Port: port, Expose: func(string) error { return nil },
		StopBackground: bg.stop, StartBackground: bg.start,
		Runtimes: func() []backends.Backend { return []backends.Backend{{Name: backends.CPU, Usable: true}} }})
	t.Cleanup(c.Close)
	return c
}

// TestStartDuringStop: a Start clicked while a Stop is still stopping the batch runner (the
// window shows the server stopped from Stop's first step) leaves the server running with its
// batch runner running too, not a running server whose batches never run until the next Stop
// and Start.
func TestStartDuringStop(t *testing.T) {
	bg := &background{}
	c := lifecycleController(t, bg)
	if err := c.StartServer(); err != nil {
		t.Fatal(err)
	}
	bg.mu.Lock()
	bg.stopping, bg.release = make(chan struct{}), make(chan struct{})
	stopping, release := bg.stopping, bg.release
	bg.mu.Unlock()
	stopped := make(chan error, 1)
	go func() { stopped <- c.StopServer() }()
	<-stopping // Stop is in the batch runner's stop; the server is already shut down
	if c.Server().Running {
		t.Fatal("the server shows running while it stops")
	}
	started := make(chan error, 1)
	go func() { started <- c.StartServer() }()
	time.Sleep(200 * time.Millisecond) // Start may return before Stop does: it must still end right
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-started:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start never returned")
	}
	if st := c.Server(); st.Running && !bg.isRunning() {
		t.Fatalf("the server runs (%+v) with its batch runner stopped", st)
	}
}

// TestCloseEndsTheEventRelay: Close ends the goroutine that relays the manager's events (a
// controller made and closed leaves no goroutine behind).
func TestCloseEndsTheEventRelay(t *testing.T) {
	bg := &background{}
	c := lifecycleController(t, bg)
	c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, "app/desktop.New.func") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the event relay outlives Close:\n%s", relayStack(stacks))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// relayStack is the goroutine of stacks running in desktop.New.
func relayStack(stacks string) string {
	for _, g := range strings.Split(stacks, "\n\n") {
		if strings.Contains(g, "app/desktop.New.func") {
			return g
		}
	}
	return ""
}
