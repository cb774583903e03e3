package supervise

import (
	"context"
	"os"
	"strings"
	"testing"
)

// TestAPIKeyReachesTheServerOnly: a Config.APIKey is the server's {api_key} and in the
// variables llama-server and vLLM read (overriding an inherited value), and never in its log,
// which the lane's state and the admin may show.
func TestAPIKeyReachesTheServerOnly(t *testing.T) {
	t.Setenv("VLLM_API_KEY", "inherited")
	cfg := fastConfig(t, "serve")
	cfg.Command += " --key {api_key}"
	cfg.APIKey = "sk-lane-secret"
	p := startProcess(t, cfg)
	if err := p.WaitHealthy(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := getBody(t, p.URL()+"/v1/keys"), "sk-lane-secret sk-lane-secret sk-lane-secret"; got != want {
		t.Errorf("the server was given %q, want %q", got, want)
	}
	log, err := os.ReadFile(p.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(log), "sk-lane-secret") || !strings.Contains(string(log), "<api key>") {
		t.Errorf("the log shows the key, or not where it went:\n%s", log)
	}
}
