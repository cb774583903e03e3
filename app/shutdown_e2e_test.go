package app

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
)

// logCounter counts the bytes the process logs through slog while a test runs.
type logCounter struct {
	mu sync.Mutex
	n  int
}

func (c *logCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += len(p)
	return len(p), nil
}

func (c *logCounter) bytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// countLogs sends slog's output to a counter until the test ends.
func countLogs(t *testing.T) *logCounter {
	c := &logCounter{}
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(c, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return c
}

// cpuTime is the CPU time this process has used (its workers are other processes).
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestCloseMidBatchLeavesNothingRunning: a server is closed in the middle of a batch, then a
// restart is closed at once, while its preload and the resumed batch wait for the model (as a
// desktop Quit right after start does). Afterwards nothing of either is left: the goroutines go
// back to what they were, the process stops using CPU and stops logging. A third start finishes
// the batch with every line exactly once: the lines the closes cut short ran again.
func TestCloseMidBatchLeavesNothingRunning(t *testing.T) {
	logs := countLogs(t)
	baseline := runtime.NumGoroutine()
	cfg := testConfig(t, testModel)
	cfg.Parallel = 1
	model := modelID(testModel)
	const lines = 60

	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler())
	client := sdk(srv.URL)
	b := createBatch(t, client, batchInput(model, lines, 64))
	mid := waitBatch(t, client, b.ID, "a few lines to finish", func(b *openai.Batch) bool {
		return b.RequestCounts.Completed >= 3 || batchEnded(b)
	})
	if batchEnded(mid) {
		t.Fatalf("the batch ended before the close (%s); make its lines longer", mid.RawJSON())
	}
	srv.Close()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	again, err := New(cfg) // preloads the model and resumes the batch...
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Close(); err != nil { // ...and quits at once
		t.Fatal(err)
	}
	http.DefaultClient.CloseIdleConnections()

	// Nothing outlives Close: no goroutine, no CPU, no log lines.
	closedAt, cpuAt := logs.bytes(), cpuTime(t)
	deadline := time.Now().Add(30 * time.Second)
	for grown := runtime.NumGoroutine() - baseline; grown > 3; grown = runtime.NumGoroutine() - baseline {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines +%d after Close:\n%s", grown, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // a window to see whether anything still runs
	used, logged := cpuTime(t)-cpuAt, logs.bytes()-closedAt
	t.Logf("after Close: %s of CPU and %d bytes of log in %s", used, logged, time.Since(deadline.Add(-30*time.Second)).Round(time.Millisecond))
	if used > 300*time.Millisecond {
		t.Errorf("the process used %s of CPU in the seconds after Close: something still runs", used)
	}
	if logged > 16<<10 {
		t.Errorf("%d bytes logged after Close: something still runs", logged)
	}

	// Nothing acknowledged is lost: the batch resumes and every line is done once.
	_, srv3 := startServer(t, cfg, false)
	client = sdk(srv3.URL)
	done := waitBatch(t, client, b.ID, "the resumed batch to end", batchEnded)
	if done.Status != openai.BatchStatusCompleted || done.RequestCounts.Completed != lines || done.RequestCounts.Failed != 0 {
		t.Fatalf("after the restarts: %s", done.RawJSON())
	}
	_, out := outputLines(t, client, done.OutputFileID)
	ids := customIDs(out)
	slices.Sort(ids)
	want := make([]string, lines)
	for i := range want {
		want[i] = fmt.Sprintf("line-%02d", i)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("output custom ids %v, want each of the %d once", ids, lines)
	}
}
