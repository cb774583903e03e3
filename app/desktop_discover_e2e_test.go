package app

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/models/hf/hftest"
	"github.com/superfluid/superfluid/tray"
)

// TestDiscoverFindsSizesAndDownloads: over a real desktop.Controller against the fake Hub,
// Discover finds the repository, sizes its quantization from the GGUF header read with a
// Range request (not an estimate from the size), reads its card, and the download it names is
// then in the catalog.
func TestDiscoverFindsSizesAndDownloads(t *testing.T) {
	hub := tinyHub(t)
	hub.AddFile("tester/tiny-GGUF", "README.md", []byte("# Tiny\n"))
	hub.SetInfo("tester/tiny-GGUF", hftest.Info{Downloads: 42, License: "mit"})
	cfg := testConfig(t, "")
	cfg.HFEndpoint = hub.URL()
	_, c := openController(t, cfg)
	ctx := context.Background()

	hits, err := c.Discover(ctx, tray.DiscoverQuery{Text: "tiny"})
	if err != nil || len(hits) != 1 || hits[0].Repo != "tester/tiny-GGUF" || hits[0].Downloads != 42 || hits[0].License != "mit" {
		t.Fatalf("Discover = %+v, %v", hits, err)
	}
	qs, err := c.HubQuants(ctx, "tester/tiny-GGUF", 4096, 1)
	if err != nil || len(qs) != 1 || qs[0].Name != "Q8_0" || qs[0].Estimated || qs[0].Need <= qs[0].Size {
		t.Fatalf("HubQuants = %+v, %v", qs, err)
	}
	if r := hub.Ranges("tester/tiny-GGUF", "tiny-Q8_0.gguf"); len(r) != 1 || !strings.HasPrefix(r[0], "bytes=0-") {
		t.Errorf("header read with ranges %q", r)
	}
	if card, err := c.ModelCard(ctx, "tester/tiny-GGUF"); err != nil || card != "# Tiny\n" {
		t.Errorf("ModelCard = %q, %v", card, err)
	}
	if err := c.Pull(ctx, "hf.co/tester/tiny-GGUF:"+qs[0].Name); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range c.Models() {
		found = found || m.ID == "hf.co/tester/tiny-GGUF:Q8_0"
	}
	if !found {
		t.Fatalf("not in the catalog: %+v", c.Models())
	}
}

// TestWelcomeSuggestsFromDiscover: the welcome's suggestion sizes the listed starter models
// with Discover's own HubQuants over the fake Hub (where one of them is a tiny model, the
// others missing), and suggests the quantization Discover would preselect.
func TestWelcomeSuggestsFromDiscover(t *testing.T) {
	hub := tinyHub(t)
	data, err := os.ReadFile(writeModels(t, t.TempDir(), 1)[0])
	if err != nil {
		t.Fatal(err)
	}
	hub.AddFile("unsloth/gemma-3-1b-it-GGUF", "gemma-3-1b-it-Q4_K_M.gguf", data)
	hub.AddFile("unsloth/gemma-3-1b-it-GGUF", "gemma-3-1b-it-Q8_0.gguf", append(append([]byte(nil), data...), make([]byte, 4096)...))
	cfg := testConfig(t, "")
	cfg.HFEndpoint = hub.URL()
	_, c := openController(t, cfg)
	s, err := c.Suggestion(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Both fit a tiny model's need anywhere; Discover preselects the larger.
	if s.Reference != "hf.co/unsloth/gemma-3-1b-it-GGUF:Q8_0" || s.Need <= 0 || s.Free <= 0 {
		t.Fatalf("Suggestion = %+v", s)
	}
}
