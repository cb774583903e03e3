package worker

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestWorkerEnvironmentHasNoHubToken: a worker parses untrusted model files, so the user's
// Hugging Face variables (HF_TOKEN above all), whether inherited or added, never reach it;
// everything else does. Checked in the running child's /proc/PID/environ.
func TestWorkerEnvironmentHasNoHubToken(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc here to read a process's environment")
	}
	parent := append(os.Environ(), "HF_TOKEN=hf_secret", "HF_ENDPOINT=http://hub.example", "HF_HOME=/srv/hf",
		"HUGGING_FACE_HUB_TOKEN=hf_legacy", "hf_token=lower", "KEEP_ME=1", "NOT_HF_TOKEN=kept",
		"SUPERFLUID_API_KEY=sk-sf-admin")
	c, _ := started(t, "ok", func(o *Options) {
		o.BaseEnv = parent
		o.Env = append(o.Env, "HF_HUB_OFFLINE=1", "ADDED=yes")
	})
	pid := c.PID()
	if pid == 0 {
		t.Fatal("no worker running")
	}
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Split(string(bytes.TrimRight(raw, "\x00")), "\x00")
	for _, kv := range env {
		key, _, _ := strings.Cut(kv, "=")
		if up := strings.ToUpper(key); strings.HasPrefix(up, "HF_") || strings.HasPrefix(up, "HUGGING_FACE_") || up == "SUPERFLUID_API_KEY" {
			t.Errorf("the worker's environment holds %s", kv)
		}
	}
	for _, want := range []string{"KEEP_ME=1", "NOT_HF_TOKEN=kept", "ADDED=yes", childEnv + "=1"} {
		if !slices.Contains(env, want) {
			t.Errorf("the worker's environment lacks %s", want)
		}
	}
}
