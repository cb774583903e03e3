package supervise

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestKeepPortWaitsForItsPort: with KeepPort a server restarted while something else holds its
// port is not moved to another port (a forwarding engine holds the URL it was given): the start
// fails and backs off until the port is free, then the server comes back where it was.
func TestKeepPortWaitsForItsPort(t *testing.T) {
	sick := filepath.Join(t.TempDir(), "sick")
	cfg := fastConfig(t, "serve")
	cfg.Env = append(cfg.Env, "SUPERVISE_TEST_SICK="+sick)
	cfg.KeepPort = true
	var mu sync.Mutex
	var squatter net.Listener
	var addr string
	cfg.OnChange = func(s Status) {
		mu.Lock()
		defer mu.Unlock()
		if s.State == Healthy && addr == "" {
			addr = s.URL[len("http://"):]
		}
		if s.State == Failed && squatter == nil && addr != "" {
			os.Remove(sick)
			squatter, _ = net.Listen("tcp", addr) // someone else takes the port while it restarts
		}
	}
	p := startProcess(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	first := p.URL()
	os.WriteFile(sick, nil, 0o600)
	waitFor(t, "the squatter", 5*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return squatter != nil })
	time.Sleep(time.Second) // several backoffs
	if u := p.URL(); u != "" {
		t.Fatalf("with its port taken the server came back at %s (was %s)", u, first)
	}
	mu.Lock()
	squatter.Close()
	mu.Unlock()
	if err := p.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	if u := p.URL(); u != first {
		t.Fatalf("back at %s, want %s", u, first)
	}
}
