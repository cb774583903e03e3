package supervise

import (
	"context"
	"testing"
)

// TestModelIsNeverAnOption: a model that reads as an option ("--trust-remote-code",
// "-c/etc/x") is refused by Start and Switch, so whoever names a lane's model (a member's
// booking) cannot add a flag to the server's command line where {model} stands alone
// (vllm serve {model}).
func TestModelIsNeverAnOption(t *testing.T) {
	dir := t.TempDir()
	for _, model := range []string{"--trust-remote-code", "-c/etc/x", "-"} {
		if p, err := Start(Config{Command: "sh -c 'sleep 60' {model} --port {port}", Model: model, LogDir: dir}); err == nil {
			p.Stop(context.Background())
			t.Errorf("Start with the model %q started", model)
		}
	}
	p, err := Start(Config{Command: "sh -c 'sleep 60' {model} --port {port}", Model: "org/model", LogDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(context.Background())
	if err := p.Switch("--trust-remote-code"); err == nil {
		t.Error("Switch to the model --trust-remote-code was taken")
	}
}
