package supervise

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

// superfluidBinary is a built superfluid: $SUPERFLUID_BIN, else the checkout's bin/superfluid
// (make build). This package cannot build one itself: the binary is cgo, the package is not.
func superfluidBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("SUPERFLUID_BIN")
	if bin == "" {
		bin, _ = filepath.Abs(filepath.Join("..", "..", "bin", "superfluid"))
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no superfluid binary at %s (run make build, or set SUPERFLUID_BIN)", bin)
	}
	return bin
}

// testModel is stories260K from ../shared when present, else a tiny llama written here; its
// catalog id is the file name without .gguf.
func testModel(t *testing.T) (path, id string) {
	t.Helper()
	path, _ = filepath.Abs(filepath.Join("..", "..", "..", "shared", "models", "stories260K.gguf"))
	if _, err := os.Stat(path); err != nil {
		path = filepath.Join(t.TempDir(), "tiny.gguf")
		if err := gguftest.WriteTinyLlama(path, gguftest.TinyLlamaOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return path, strings.TrimSuffix(filepath.Base(path), ".gguf")
}

// chat sends one chat request; stream reads the SSE to its end.
func chat(ctx context.Context, base, model string, stream bool, maxTokens int) (int, error) {
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":%d,"stream":%v}`, model, maxTokens, stream)
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
	}
	return res.StatusCode, sc.Err()
}

// A second superfluid as the command: healthy, serving the model; killed with SIGKILL under
// load, it is unavailable, restarted and healthy again; Stop leaves none of its processes.
func TestSecondSuperfluid(t *testing.T) {
	bin := superfluidBinary(t)
	model, id := testModel(t)
	data := t.TempDir()
	var rec recorder
	cfg := Config{
		Command:       fmt.Sprintf("'%s' serve {model} --port {port} --data-dir '%s' --parallel 4", bin, data),
		Model:         model,
		LogDir:        t.TempDir(),
		Name:          "lane-a",
		Env:           []string{"XDG_CONFIG_HOME=" + data, "XDG_CACHE_HOME=" + data, "XDG_STATE_HOME=" + data},
		StartTimeout:  60 * time.Second,
		CheckInterval: 100 * time.Millisecond,
		MinBackoff:    200 * time.Millisecond,
		Grace:         5 * time.Second,
		OnChange:      rec.add,
	}
	p := startProcess(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	if err := p.WaitHealthy(ctx); err != nil {
		t.Fatalf("%v\n%s", err, strings.Join(p.Tail(), "\n"))
	}
	if body := getBody(t, p.URL()+"/v1/models"); !strings.Contains(body, `"id":"`+id+`"`) {
		t.Fatalf("/v1/models = %s, want %s", body, id)
	}
	if code, err := chat(ctx, p.URL(), id, false, 8); err != nil || code != 200 {
		t.Fatalf("chat: %d %v", code, err)
	}

	// Load: streams in a loop until the test is done with them.
	load, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var mu sync.Mutex
	served := 0
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for load.Err() == nil {
				base := p.URL()
				if base == "" {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				if code, err := chat(load, base, id, true, 200); err == nil && code == 200 {
					mu.Lock()
					served++
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	first := p.Status().PID
	kids := descendants(first)
	if len(kids) == 0 {
		t.Error("the second superfluid runs no worker")
	}
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the crash noticed", 5*time.Second, func() bool { return p.State() != Healthy })
	if p.URL() != "" || p.RetryAfter() < time.Second {
		t.Errorf("after the crash: URL %q, RetryAfter %s; want none and at least 1s", p.URL(), p.RetryAfter())
	}
	if err := p.WaitHealthy(ctx); err != nil {
		t.Fatalf("%v\n%s", err, strings.Join(p.Tail(), "\n"))
	}
	second := p.Status()
	if second.Starts != 2 || second.PID == first {
		t.Errorf("after the restart: %+v (first pid %d)", second, first)
	}
	if !strings.Contains(second.Err, "signal: killed") {
		t.Errorf("Err = %q, want the kill", second.Err)
	}
	mu.Lock()
	before := served
	mu.Unlock()
	waitFor(t, "streams served by the restarted server", 20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return served > before
	})
	stopLoad()
	wg.Wait()
	t.Logf("streams served: %d before the restart was healthy, %d in all", before, served)
	assertGone(t, append(kids, first)...)
	var sawFailed bool
	for _, s := range rec.all() {
		sawFailed = sawFailed || s.State == Failed
	}
	if !sawFailed {
		t.Error("no failed state between the crash and the restart")
	}
	log, _ := os.ReadFile(p.LogPath())
	if n := strings.Count(string(log), "[supervise] starting"); n != 2 {
		t.Errorf("the log has %d starts, want 2 (kept across the restart)", n)
	}

	kids = descendants(second.PID)
	t.Logf("second run: pid %d, workers %v", second.PID, kids)
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer stopCancel()
	if err := p.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	assertGone(t, append(kids, second.PID)...)
	if b, _ := os.ReadFile(p.LogPath()); strings.Contains(string(b), "SIGKILL") {
		t.Errorf("superfluid needed SIGKILL to stop:\n%s", b)
	}
}

// llama-server as the command, when one is installed.
func TestLlamaServer(t *testing.T) {
	bin, err := exec.LookPath("llama-server")
	if err != nil {
		t.Skip("llama-server is not on PATH (llama.cpp's server is not built on this machine)")
	}
	model, _ := testModel(t)
	p := startProcess(t, Config{
		Command:       "'" + bin + "' -m {model} --port {port} --host 127.0.0.1 -c 512",
		Model:         model,
		LogDir:        t.TempDir(),
		StartTimeout:  60 * time.Second,
		CheckInterval: 100 * time.Millisecond,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.WaitHealthy(ctx); err != nil {
		t.Fatalf("%v\n%s", err, strings.Join(p.Tail(), "\n"))
	}
	if code, err := chat(ctx, p.URL(), "any", false, 8); err != nil || code != 200 {
		t.Fatalf("chat: %d %v", code, err)
	}
	pid := p.Status().PID
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	assertGone(t, pid)
}
