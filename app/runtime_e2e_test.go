package app

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/app/desktop"
	"github.com/superfluid/superfluid/runtime/backends"
	"github.com/superfluid/superfluid/tray"
)

// TestVulkanRuntimeServesAReply picks the Vulkan runtime for a model through /v1/models/load,
// and shows from the worker's log and /v1/models that a Vulkan device served the reply. It
// needs the runtime (scripts/build-runtime.sh vulkan installs it in the default data dir) and a
// Vulkan driver (Mesa's lavapipe runs on the CPU); without them it skips, saying which is missing.
func TestVulkanRuntimeServesAReply(t *testing.T) {
	installed := filepath.Join(defaultDataDir(), "runtimes", "vulkan")
	if _, err := os.Stat(filepath.Join(installed, "manifest.json")); err != nil {
		t.Skipf("no Vulkan runtime in %s: run scripts/build-runtime.sh vulkan (minutes of compiling)", installed)
	}
	if len(backends.Detect().Vulkan) == 0 {
		t.Skip("no Vulkan driver on this machine: install mesa-vulkan-drivers (lavapipe) or a GPU driver")
	}
	cfg := testConfig(t, "")
	// The workers' stderr (llama.cpp's log) goes to a file: writes from several copiers are safe.
	logs, err := os.Create(filepath.Join(t.TempDir(), "workers.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	cfg.WorkerLog = logs
	// Mesa's lavapipe is a Vulkan device of the CPU type, which ggml skips unless it is named;
	// a GPU needs nothing of the kind.
	cfg.WorkerEnv = append(cfg.WorkerEnv, "GGML_VK_VISIBLE_DEVICES=0")
	readLog := func() string {
		b, _ := os.ReadFile(logs.Name())
		return string(b)
	}
	if err := os.MkdirAll(filepath.Join(cfg.DataDir, "runtimes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", installed, filepath.Join(cfg.DataDir, "runtimes", "vulkan")).CombinedOutput(); err != nil {
		t.Fatalf("copy the runtime: %v %s", err, out)
	}
	a, srv := startServer(t, cfg, false)
	e, err := a.Manager().Catalog().AddLocal(context.Background(), testModel, "")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(srv.URL+"/v1/models/load", "application/json", strings.NewReader(`{"model":"`+e.ID+`","runtime":"vulkan"}`))
	if err != nil {
		t.Fatal(err)
	}
	var loaded struct {
		Runtime string `json:"runtime"`
		Loaded  bool   `json:"loaded"`
		Error   struct{ Message string }
	}
	json.NewDecoder(resp.Body).Decode(&loaded)
	resp.Body.Close()
	if resp.StatusCode != 200 || !loaded.Loaded {
		t.Fatalf("load on vulkan: %d %+v\nworker log:\n%s", resp.StatusCode, loaded, readLog())
	}
	if reply := chatOnce(t, srv.URL, e.ID); reply == "" {
		t.Fatal("empty reply")
	}
	if loaded.Runtime != "llamacpp-vulkan" {
		t.Fatalf("/v1/models runtime %q, want llamacpp-vulkan\nworker log:\n%s", loaded.Runtime, readLog())
	}
	log := readLog()
	if !strings.Contains(log, "offloading up to") || !strings.Contains(strings.ToLower(log), "vulkan") {
		t.Fatalf("the worker log does not show a Vulkan device:\n%s", log)
	}
	t.Logf("worker log lines about the device:\n%s", grepLines(log, "ulkan", "offload"))

	// The desktop app's per-model settings pick the same runtime (and the CPU back).
	c := newController(a)
	defer c.Close()
	if err := c.SetSettings(e.ID, tray.ModelSettings{Runtime: "cpu"}); err != nil {
		t.Fatal(err)
	}
	if reply := chatOnce(t, srv.URL, e.ID); reply == "" {
		t.Fatal("empty reply on the CPU")
	}
	if rt := modelRuntime(t, c, e.ID); rt != "llamacpp-cpu" {
		t.Fatalf("after picking the CPU in settings the model runs on %q", rt)
	}
	if err := c.SetSettings(e.ID, tray.ModelSettings{Runtime: "vulkan"}); err != nil {
		t.Fatal(err)
	}
	if reply := chatOnce(t, srv.URL, e.ID); reply == "" {
		t.Fatal("empty reply on Vulkan")
	}
	if rt := modelRuntime(t, c, e.ID); rt != "llamacpp-vulkan" {
		t.Fatalf("after picking Vulkan in settings the model runs on %q", rt)
	}
}

func modelRuntime(t *testing.T, c *desktop.Controller, id string) string {
	t.Helper()
	for _, m := range c.Models() {
		if m.ID == id {
			return m.Runtime
		}
	}
	t.Fatalf("%s is not listed", id)
	return ""
}

func grepLines(text string, words ...string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		for _, w := range words {
			if strings.Contains(line, w) {
				out = append(out, line)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
