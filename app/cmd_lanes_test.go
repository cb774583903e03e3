package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLanesCommand: superfluid lanes add, list, switch and rm on a data directory; bad input
// (a duplicate name, an unknown device, engine kind or model, a missing lane) exits with 2 and
// stores nothing; the upstream key is never printed.
func TestLanesCommand(t *testing.T) {
	data := t.TempDir()
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("sk-up-very-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(want int, args ...string) string {
		t.Helper()
		code, out, errOut := cli(append(append([]string{"lanes"}, args...), "--data-dir", data)...)
		if code != want {
			t.Fatalf("lanes %v: exit %d, want %d\n%s%s", args, code, want, out, errOut)
		}
		if strings.Contains(out+errOut, "sk-up-very-secret") {
			t.Fatalf("lanes %v printed the upstream key", args)
		}
		return out + errOut
	}
	run(0, "add", "up", "--engine", "openai", "--model", "qwen", "--url", "http://192.0.2.7:8000/v1", "--upstream-key-file", keyFile)
	run(0, "add", "job", "--device", "cpu", "--engine", "command", "--model", "/models/m.gguf", "--command", "llama-server -m {model} --port {port}")
	for _, bad := range [][]string{
		{"add", "up", "--engine", "openai", "--model", "qwen", "--url", "http://192.0.2.8/v1"},
		{"add", "x", "--device", "cuda:9", "--engine", "command", "--model", "m", "--command", "c"},
		{"add", "x", "--device", "cpu", "--engine", "tgi", "--model", "m"},
		{"add", "x", "--device", "cpu", "--engine", "local", "--model", "no-such-model"},
		{"add", "x", "--device", "cpu", "--engine", "openai", "--model", "m"},
		{"switch", "nope", "m"},
		{"rm", "nope"},
	} {
		run(2, bad...)
	}
	out := run(0, "list")
	if !strings.Contains(out, "up") || !strings.Contains(out, "stored") || !strings.Contains(out, "job") || strings.Contains(out, " x ") {
		t.Fatalf("list:\n%s", out)
	}
	run(0, "switch", "up", "llama-3")
	if out := run(0, "list"); !strings.Contains(out, "llama-3") {
		t.Fatalf("after switch:\n%s", out)
	}
	run(0, "rm", "up")
	if out := run(0, "list"); strings.Contains(out, "llama-3") {
		t.Fatalf("after rm:\n%s", out)
	}
	run(2, "frobnicate")
}
