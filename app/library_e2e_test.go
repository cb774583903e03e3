package app

import (
	"bytes"
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

	"github.com/openai/openai-go/v3"

	"github.com/superfluid/superfluid/assets"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/runtime/models/hf/hftest"
)

// cliEnv makes the test binary run the command line (a real process the test can kill).
const cliEnv = "SUPERFLUID_TEST_CLI"

// chatOnce asks model for a few tokens.
func chatOnce(t *testing.T, srv string, model string) string {
	t.Helper()
	reply, err := sdk(srv).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Once upon a time")},
		MaxTokens: openai.Int(4), Temperature: openai.Float(0),
	})
	if err != nil {
		t.Fatalf("chat with %s: %v", model, err)
	}
	return reply.Choices[0].Message.Content
}

// TestBundledModelServesWithNoModelGiven: a fresh data dir, no model named, no ../shared: the
// bundled model answers.
func TestBundledModelServesWithNoModelGiven(t *testing.T) {
	a, srv := startServer(t, testConfig(t, ""), false)
	e, err := a.Manager().Catalog().Lookup(assets.BundledModelID)
	if err != nil || e.Source != "bundled" || !strings.HasPrefix(e.Path, modelsDir(a.cfg.DataDir)) {
		t.Fatalf("bundled model entry %+v, %v", e, err)
	}
	if chatOnce(t, srv.URL, assets.BundledModelID) == "" {
		t.Fatal("the bundled model said nothing")
	}
	// Removing it removes its file; it is not registered again behind the user's back while
	// the file is gone... but a fresh data dir gets it again.
	if _, err := a.Service().DeleteModel(context.Background(), assets.BundledModelID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(e.Path); !os.IsNotExist(err) {
		t.Fatalf("the bundled model's file is still there: %v", err)
	}
}

// writeModels writes n tiny models into dir.
func writeModels(t *testing.T, dir string, n int) []string {
	t.Helper()
	var paths []string
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("tiny%d.gguf", i))
		if err := gguftest.WriteTinyLlama(p, gguftest.TinyLlamaOptions{Seed: int64(i + 1)}); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// TestTwoModelsAndEviction: two models serve at once; a third evicts the least recently used
// idle one under the memory budget, and its worker process exits.
func TestTwoModelsAndEviction(t *testing.T) {
	cfg := testConfig(t, "")
	cfg.ModelKeepAlive = -1
	a, srv := startServer(t, cfg, false)
	cat := a.Manager().Catalog()
	var ids []string
	for _, p := range writeModels(t, t.TempDir(), 3) {
		e, err := cat.AddLocal(context.Background(), p, "")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	e0, _ := cat.Lookup(ids[0])
	need := a.Manager().Status(e0).Need
	a.mgr.SetMemoryBudget(2*need + need/2) // two fit, a third does not

	chatOnce(t, srv.URL, ids[0])
	chatOnce(t, srv.URL, ids[1])
	chatOnce(t, srv.URL, ids[0]) // ids[1] is now the least recently used
	pid1 := a.workerPID(t, ids[1])
	if !a.loaded(ids[0]) || !a.loaded(ids[1]) {
		t.Fatal("two models are not loaded side by side")
	}
	chatOnce(t, srv.URL, ids[2])
	if !a.loaded(ids[0]) || a.loaded(ids[1]) || !a.loaded(ids[2]) {
		t.Fatalf("after the third: %v %v %v; want the least recently used evicted", a.loaded(ids[0]), a.loaded(ids[1]), a.loaded(ids[2]))
	}
	if err := syscall.Kill(pid1, 0); err == nil {
		t.Fatalf("the evicted model's worker %d is still running", pid1)
	}
	if _, used := a.Manager().Budget(); used > 2*need+need/2 {
		t.Fatalf("estimated use %d over the budget", used)
	}
	// Counting tokens on the evicted model does not load it again.
	resp, err := http.Post(srv.URL+"/v1/tokenize", "application/json", strings.NewReader(`{"model":"`+ids[1]+`","input":"Once upon a time"}`))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("tokenize on an evicted model: %v %v", err, resp.Status)
	}
	resp.Body.Close()
	if a.loaded(ids[1]) {
		t.Fatal("counting tokens loaded the evicted model")
	}
}

// TestTwentyFirstRequestsOneWorker: 20 simultaneous first requests start exactly one worker.
func TestTwentyFirstRequestsOneWorker(t *testing.T) {
	cfg := testConfig(t, "")
	cfg.Parallel = 4
	a, srv := startServer(t, cfg, false)
	e, err := a.Manager().Catalog().AddLocal(context.Background(), writeModels(t, t.TempDir(), 1)[0], "")
	if err != nil {
		t.Fatal(err)
	}
	events, stop := a.Manager().Subscribe(100)
	defer stop()
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := sdk(srv.URL).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model: e.ID, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}, MaxTokens: openai.Int(2),
			})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	loads := 0
	for len(events) > 0 {
		if ev := <-events; ev.Kind == models.EventLoading {
			loads++
		}
	}
	if loads != 1 {
		t.Fatalf("20 first requests started %d loads, want 1", loads)
	}
}

// TestKeepAliveExpiryStopsTheWorker: when the keep-alive runs out the worker process exits.
func TestKeepAliveExpiryStopsTheWorker(t *testing.T) {
	cfg := testConfig(t, "")
	cfg.ModelKeepAlive = 200 * time.Millisecond
	a, srv := startServer(t, cfg, false)
	e, _ := a.Manager().Catalog().AddLocal(context.Background(), writeModels(t, t.TempDir(), 1)[0], "")
	chatOnce(t, srv.URL, e.ID)
	pid := a.workerPID(t, e.ID)
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the worker outlived its keep-alive")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if a.loaded(e.ID) {
		t.Fatal("the catalog still says loaded")
	}
	chatOnce(t, srv.URL, e.ID) // and it loads again on the next request
}

// TestPullKilledAndResumedThroughTheCLI: `superfluid pull` killed mid-download (a real
// process, SIGKILL) resumes from its partial file when run again, and registers a verified model.
func TestPullKilledAndResumedThroughTheCLI(t *testing.T) {
	hub := hftest.New()
	defer hub.Close()
	data, err := os.ReadFile(testModel)
	if err != nil {
		t.Fatal(err)
	}
	const repo, file = "tester/stories-GGUF", "stories-F32.gguf"
	hub.AddFile(repo, file, data)
	cut := int64(len(data) / 2)
	hub.Faults(repo, file).StallAt.Store(cut) // hang there until the process is killed
	dataDir := t.TempDir()
	args := []string{"pull", "--data-dir", dataDir, "--hf-endpoint", hub.URL(), repo + ":F32"}

	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	partial := filepath.Join(modelsDir(dataDir), "hf", "tester", "stories-GGUF", hftest.Commit, file+".partial")
	deadline := time.Now().Add(60 * time.Second)
	for {
		if st, err := os.Stat(partial); err == nil && st.Size() >= cut {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the partial never reached %d bytes; output:\n%s", cut, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	sentBefore := hub.BytesSent(repo, file)

	var stdout, stderr bytes.Buffer
	if code := Main(append([]string{"superfluid"}, args...), &stdout, &stderr); code != 0 {
		t.Fatalf("second pull: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	ranges := hub.Ranges(repo, file)
	if last := ranges[len(ranges)-1]; last != fmt.Sprintf("bytes=%d-", cut) {
		t.Fatalf("the second pull asked for %q, want it to resume at %d (ranges %v)", last, cut, ranges)
	}
	if resent := hub.BytesSent(repo, file) - sentBefore; resent != int64(len(data))-cut {
		t.Fatalf("the resume sent %d bytes, want only the missing %d", resent, int64(len(data))-cut)
	}
	if !strings.Contains(stdout.String(), "pulled hf.co/"+repo+":F32") || !strings.Contains(stdout.String(), "verifying") {
		t.Fatalf("output:\n%s", stdout.String())
	}
	stdout.Reset()
	if code := Main([]string{"superfluid", "list", "--data-dir", dataDir}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "hf.co/"+repo+":F32") {
		t.Fatalf("list after the pull: %d\n%s", code, stdout.String())
	}
	// And it serves.
	cfg := testConfig(t, "hf.co/"+repo+":F32")
	cfg.DataDir = dataDir
	_, srv := startServer(t, cfg, false)
	chatOnce(t, srv.URL, repo+":F32")
}

// loaded reports whether the model is loaded.
func (a *App) loaded(id string) bool {
	e, err := a.mgr.Catalog().Lookup(id)
	return err == nil && a.mgr.Status(e).State == models.StateLoaded
}

// workerPID is the running worker of the model.
func (a *App) workerPID(t *testing.T, id string) int {
	t.Helper()
	e, err := a.mgr.Catalog().Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	pid := a.workers[e.Path].PID()
	if pid == 0 {
		t.Fatalf("%s has no running worker", id)
	}
	return pid
}

// tinyHub is a Hub holding one small model, tester/tiny-GGUF:Q8_0; it closes with the test.
func tinyHub(t *testing.T) *hftest.Server {
	hub := hftest.New()
	t.Cleanup(hub.Close)
	data, err := os.ReadFile(writeModels(t, t.TempDir(), 1)[0])
	if err != nil {
		t.Fatal(err)
	}
	hub.AddFile("tester/tiny-GGUF", "tiny-Q8_0.gguf", data)
	return hub
}

// TestServeReferencePullsWhenMissing: `superfluid serve OWNER/REPO:QUANT` pulls a model that is
// not in the catalog, then loads it; a second start does not download again.
func TestServeReferencePullsWhenMissing(t *testing.T) {
	hub := tinyHub(t)
	cfg := testConfig(t, "tester/tiny-GGUF:Q8_0")
	cfg.HFEndpoint = hub.URL()
	var out bytes.Buffer
	if err := pullIfMissing(cfg, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "pulling it") || !strings.Contains(out.String(), "done") {
		t.Fatalf("output:\n%s", out.String())
	}
	a, srv := startServer(t, cfg, false)
	if a.preload == nil || a.preload.ID != "hf.co/tester/tiny-GGUF:Q8_0" {
		t.Fatalf("preloaded %+v", a.preload)
	}
	chatOnce(t, srv.URL, "tester/tiny-GGUF:Q8_0")
	requests := hub.Requests("tester/tiny-GGUF", "tiny-Q8_0.gguf")
	out.Reset()
	if err := pullIfMissing(cfg, &out); err != nil || out.Len() != 0 || hub.Requests("tester/tiny-GGUF", "tiny-Q8_0.gguf") != requests {
		t.Fatalf("second start pulled again: %v %q", err, out.String())
	}
}

// TestServeBadKeyFlagsFailBeforeThePull: `superfluid serve OWNER/REPO:QUANT` with a bad
// --api-key or --key-policy fails on the flag before it pulls anything, as a start with the
// model already pulled would (exit 2, the flag named, nothing downloaded).
func TestServeBadKeyFlagsFailBeforeThePull(t *testing.T) {
	hub := tinyHub(t)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"bad api key", []string{"--api-key", "two words"}, "--api-key"},
		{"unreadable policy", []string{"--key-policy", filepath.Join(t.TempDir(), "none.json")}, "--key-policy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"serve", "--port", "0", "--data-dir", t.TempDir(), "--hf-endpoint", hub.URL()}, c.args...)
			code, _, errOut := cli(append(args, "tester/tiny-GGUF:Q8_0")...)
			if code != 2 || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, stderr %q; want 2 naming %s", code, errOut, c.want)
			}
			if n := hub.Requests("tester/tiny-GGUF", "tiny-Q8_0.gguf"); n != 0 || strings.Contains(errOut, "pulling it") {
				t.Errorf("the model was pulled before the bad flag failed (%d downloads); stderr %q", n, errOut)
			}
		})
	}
}

func TestLooksLikePath(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "assets"), 0o755)
	os.WriteFile(filepath.Join(dir, "assets", "m.gguf"), []byte("x"), 0o644)
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	os.Chdir(dir)
	for name, want := range map[string]bool{
		"assets/m.gguf":                true, // exists: a file, though it reads as OWNER/REPO
		"owner/repo/model-Q4_K_M.gguf": false, "owner/repo:Q8_0": false, "hf.co/o/r": false,
		"/abs/missing.gguf": true, "./m.gguf": true, "missing.gguf": true, "stories260K": false,
	} {
		if got := looksLikePath(name); got != want {
			t.Errorf("looksLikePath(%q) = %v, want %v", name, got, want)
		}
	}
}
